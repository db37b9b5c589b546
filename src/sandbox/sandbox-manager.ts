import { randomBytes } from 'node:crypto';
import type { Config } from '../config/config-schema.js';
import type { ContainerEngine, ContainerSpec, PullProgress, TmpfsMount } from '../engine/container-engine.js';
import { DockerEngine } from '../engine/docker-engine.js';
import { SandboxError } from '../errors.js';
import { LogStore } from '../capture/log-store.js';
import { registerExitCleanup } from './exit-hook.js';
import { containerLabels, currentOwner } from './labels.js';
import {
  checkConfigInvariants,
  checkContainerName,
  checkImageAllowed,
  checkMounts,
  containerCapabilities,
  imageMatches,
  type AddableCapability,
  checkProjectMount,
  type MountRequest,
  type NetworkMode,
  type ProjectMount,
} from '../policy/policy.js';
import { containerUser } from './container-user.js';
import { hostIdentity, verifyMounts } from './mount-identity.js';
import { checkOptions, StartOptionsSchema } from './option-schemas.js';
import { Sandbox } from './sandbox.js';
import { EXPIRY_GRACE_MS, sweepContainers, type SweepReport } from './sweep.js';
import { swallowed } from '../debug.js';
import { isWithin } from '../paths.js';
import { checkHostPathsLocal, checkOverlayEngine, projectBinds, type ProjectBinds } from '../project/project-mount.js';
import { removeProjectOverlay } from '../project/project-overlay.js';
import { settleOrphanOverlays } from './overlay-orphans.js';
import { DEFAULT_LEASE_SECONDS, Lease, LEASE_IN_CONTAINER } from './lease.js';
import { missingImageError } from '../images/golden-images.js';
import { pullFlights } from '../images/pull-flights.js';

export interface StartOptions {
  /** Image to start. @default config.images.default */
  image?: string;
  /** Container name (unique on the engine). @default genaicode-docker-<session>-<n> */
  name?: string;
  /** @default config.network */
  network?: NetworkMode;
  /** Memory limit in bytes. @default config.limits.memory */
  memoryBytes?: number;
  /** @default config.limits.cpus */
  cpus?: number;
  /** @default config.limits.pids */
  pids?: number;
  /** @default config.readOnlyRoot */
  readOnlyRoot?: boolean;
  /** Size of the tmpfs mounts of a read-only root (/tmp, the working folder). @default config.tmpfsSize */
  tmpfsBytes?: number;
  /** Capabilities added back on top of the minimal set (only ever fewer than configured). @default config.capAdd */
  capAdd?: readonly AddableCapability[];
  /** Host paths to mount; each must be on the mount allowlist. */
  mounts?: MountRequest[];
  env?: Record<string, string>;
  /** @default config.workdir */
  workdir?: string;
  /** @default config.ttlSeconds */
  ttlSeconds?: number;
  /**
   * Mount the project (config.projectRoot) at config.workdir: read-only, or writable with
   * the protected paths read-only. At most config.project.mount. @default 'none'
   */
  project?: ProjectMount;
  onPullProgress?: (p: PullProgress) => void;
  signal?: AbortSignal;
}

export interface SandboxManagerOptions {
  config: Config;
  /** @default a DockerEngine from config.engine */
  engine?: ContainerEngine;
  /** @default a new time-sortable id */
  sessionId?: string;
  /** Remove stale containers (dead owner, past expiry) before the first start. @default true */
  sweepOnStart?: boolean;
  /** The lease of a container with a project overlay, in seconds (lease.ts). @default 180 */
  leaseSeconds?: number;
}

export { BUILD_OFFLINE_SCRIPT } from '../images/golden-images.js';

/** A session id that sorts by time and names a log folder: 20261122-031500-a1b2c3. */
export function newSessionId(now = new Date()): string {
  const t = now.toISOString().replace(/[-:]/g, '').replace('T', '-').slice(0, 15);
  return `${t}-${randomBytes(3).toString('hex')}`;
}

/**
 * How each engine enforces the disk limit, learned at the first create (an engine's storage
 * driver has quotas for StorageOpt size, or not): learned once per process, per engine.
 */
const diskQuotas = new Map<object | string, 'engine' | 'measured'>();

/**
 * Whether a storage driver can enforce StorageOpt size: overlay2 on xfs (with pquota, which
 * only trying tells), btrfs, zfs, devicemapper, Windows'; not overlay2 on ext4 or vfs. An
 * engine that does not say is tried.
 */
function quotaPossible(storage: { driver: string; backingFilesystem?: string } | undefined): boolean {
  if (!storage) return true;
  if (['btrfs', 'zfs', 'devicemapper', 'windowsfilter'].includes(storage.driver)) return true;
  return storage.driver === 'overlay2' && /xfs/i.test(storage.backingFilesystem ?? '');
}

/**
 * The live sandboxes of one session: starts them under the policy, labels them, tracks
 * them, and makes sure none outlives the process (exit hook) or its expiry (dead-man switch).
 */
export class SandboxManager {
  readonly config: Config;
  readonly engine: ContainerEngine;
  readonly sessionId: string;
  readonly logs: LogStore;
  private readonly live = new Map<string, Sandbox>();

  /** Each live sandbox's expiry, enforced from here too (see armExpiry). */
  private readonly expiries = new Map<string, NodeJS.Timeout>();
  private seq = 0;
  private sweepTimer: NodeJS.Timeout | undefined;
  private swept: Promise<SweepReport | undefined> | undefined;
  private unregister: (() => void) | undefined;
  private readonly sweepOnStart: boolean;
  private readonly leaseSeconds: number;
  /** The leases of the live containers with a project overlay. */
  private readonly leases = new Map<string, Lease>();

  constructor(options: SandboxManagerOptions) {
    this.config = options.config;
    this.engine = options.engine ?? new DockerEngine(options.config.engine);
    this.sessionId = options.sessionId ?? newSessionId();
    this.sweepOnStart = options.sweepOnStart ?? true;
    this.leaseSeconds = options.leaseSeconds ?? DEFAULT_LEASE_SECONDS;
    this.logs = new LogStore(this.config.logs.dir, this.sessionId, this.config.logs);
  }

  /** Live sandboxes of this manager. */
  list(): Sandbox[] {
    return [...this.live.values()];
  }

  /** A live sandbox of THIS manager by id (full or prefix of at least 6) or name; never another's. */
  get(idOrName: string): Sandbox | undefined {
    const key = idOrName.trim();
    if (!key) return undefined;
    for (const s of this.live.values()) {
      if (s.name === key || s.id === key || (key.length >= 6 && s.id.startsWith(key))) return s;
    }
    return undefined;
  }

  /**
   * Starts a sandbox. The image allowlist and every policy check run before any engine
   * call; a missing image is pulled (progress through `onPullProgress`); if the container
   * is created but does not start, it is removed.
   * @throws SandboxError IMAGE_NOT_ALLOWED, POLICY_VIOLATION, INVALID_ARGUMENT, IMAGE_NOT_FOUND,
   *         ENGINE_UNAVAILABLE, CONTAINER_START_FAILED, ABORTED
   */
  async start(options: StartOptions = {}): Promise<Sandbox> {
    const c = this.config;
    const image = options.image ?? c.images.default;
    checkImageAllowed(image, c.images.allow, c.images.projectAllow);
    checkConfigInvariants(options, 'start options');
    if (options.name !== undefined) checkContainerName(options.name);
    checkOptions(StartOptionsSchema, options, 'start options');
    const mounts = checkMounts(options.mounts ?? [], c.mountAllow, { ...this.engineSocket(), logsDir: this.logs.rootDir });
    const name = options.name ?? `${c.containerPrefix}${this.sessionId.slice(-6)}-${++this.seq}`;
    const requested = checkProjectMount(options.project ?? 'none', c.project.mount);
    checkHostPathsLocal(this.engine, requested, mounts.length);
    if (requested === 'rw' || requested === 'scratch') await checkOverlayEngine(this.engine, requested);
    const project = this.projectBinds(requested, mounts, name);
    try {
      return await this.startWith(options, { image, name, mounts, project });
    } catch (e) {
      if (project?.overlay && ![...this.live.values()].some((s) => s.name === name)) removeProjectOverlay(project.overlay.dir);
      throw e;
    }
  }

  private async startWith(
    options: StartOptions,
    o: { image: string; name: string; mounts: ReturnType<typeof checkMounts>; project: ProjectBinds | undefined },
  ): Promise<Sandbox> {
    const c = this.config;
    const { image, name, mounts, project } = o;
    const user = containerUser(c, [...mounts, ...(project ? [{ hostPath: project.hostRoot, writable: project.mount !== 'ro' }] : [])]);
    const binds = [
      ...mounts.map((m) => ({ hostPath: m.hostPath, containerPath: m.containerPath, readOnly: !m.writable })),
      ...(project?.binds ?? []),
    ];
    // Taken now, at the check: what each mount must still be once the engine has mounted it.
    const identities = this.engine.connection?.kind === 'socket' ? binds.map((m) => ({ ...m, identity: hostIdentity(m.hostPath) })) : [];
    const workdir = options.workdir ?? c.workdir;
    // A numeric user the image may not know has no home: tools that keep caches there (pip, go, npm) need one.
    const env = { ...(project && project.mount !== 'ro' ? { HOME: '/tmp' } : {}), ...options.env };
    const abortCheck = () => {
      if (options.signal?.aborted) throw new SandboxError('ABORTED', 'Start aborted.');
    };

    abortCheck();
    if (this.sweepOnStart) {
      this.swept ??= this.sweep().catch((e: unknown) => {
        if (e instanceof SandboxError && e.code === 'ENGINE_UNAVAILABLE') throw e;
        return undefined; // a failed sweep must not block work; `cleanup` reports it
      });
      try {
        await this.swept;
      } catch (e) {
        this.swept = undefined;
        throw e;
      }
    }
    if (!(await this.engine.hasImage(image))) {
      if (imageMatches(image, c.images.localOnly) || !c.images.pull) throw missingImageError(c, image);
      // A pull of the same image under way (the pre-pull, another start) is waited for, not repeated.
      await pullFlights.pull(this.engine, image, {
        ...(options.onPullProgress ? { onProgress: options.onPullProgress } : {}),
        ...(options.signal ? { signal: options.signal } : {}),
      });
    }
    abortCheck();

    const ttl = options.ttlSeconds ?? c.ttlSeconds;
    const createdAt = new Date();
    const expiresAt = new Date(createdAt.getTime() + ttl * 1000);
    const readOnlyRoot = options.readOnlyRoot ?? c.readOnlyRoot;
    const tmpfsBytes = options.tmpfsBytes ?? c.tmpfsSize;
    const tmpfs: TmpfsMount[] = readOnlyRoot ? [{ path: '/tmp', sizeBytes: tmpfsBytes }] : [];
    // The working folder of a read-only root is a tmpfs volume, not a tmpfs mount: file writes
    // go through the engine's archive API, which reaches volumes and binds only.
    const tmpfsVolumes: TmpfsMount[] =
      readOnlyRoot && !binds.some((m) => m.containerPath === workdir) && project?.overlay?.volume.containerPath !== workdir
        ? [{ path: workdir, sizeBytes: tmpfsBytes }]
        : [];
    const memoryBytes = options.memoryBytes ?? c.limits.memory;
    const pidsLimit = options.pids ?? c.limits.pids;
    const spec: ContainerSpec = {
      image,
      name,
      // Dead-man switch: the keep-alive process ends at expiry, and auto-remove deletes the container.
      entrypoint: ['sleep'],
      cmd: [String(ttl)],
      env: Object.entries(env).map(([k, v]) => `${k}=${v}`),
      labels: containerLabels(this.sessionId, currentOwner(), createdAt, expiresAt),
      workdir,
      ...(user ? { user } : {}),
      memoryBytes,
      nanoCpus: Math.round((options.cpus ?? c.limits.cpus) * 1e9),
      pidsLimit,
      network: options.network ?? c.network,
      readOnlyRoot,
      tmpfs,
      ...(tmpfsVolumes.length ? { tmpfsVolumes } : {}),
      // The lease file is not checked as a mount: it is a file of ours, read-only, outside the working folder.
      binds: project?.overlay ? [...binds, { hostPath: project.overlay.lease, containerPath: LEASE_IN_CONTAINER, readOnly: true }] : binds,
      ...(project?.overlay ? { overlayVolumes: [project.overlay.volume] } : {}),
      capAdd: containerCapabilities((options.capAdd ?? c.capAdd).filter((cap) => c.capAdd.includes(cap))),
      autoRemove: true,
    };
    const id = await this.createWithDiskLimit(spec, c.limits.disk);
    const ids = user !== undefined ? /^(\d+):(\d+)$/.exec(user) : null;
    const userIds = ids ? { userIds: { uid: Number(ids[1]), gid: Number(ids[2]) } } : {};
    const projectInfo = project
      ? { project: { hostRoot: project.hostRoot, containerRoot: project.containerRoot, mount: project.mount } }
      : {};
    // Tracked before start, so the exit hook covers the window between create and start.
    const sandbox = new Sandbox(
      { id, name, image, sessionId: this.sessionId, workdir, createdAt, expiresAt, memoryBytes, pidsLimit, ...userIds, ...projectInfo },
      {
        engine: this.engine,
        logs: this.logs,
        exec: c.exec,
        files: c.files,
        // A read-only root has no writable layer to grow: nothing to measure (its tmpfs mounts have their own size).
        disk: { limitBytes: c.limits.disk, measured: this.diskEnforcement !== 'engine' && !readOnlyRoot },
        onStopped: (s) => this.forget(s.id),
        ...(project?.overlay ? { overlay: { dir: project.overlay.dir, upper: project.overlay.upper } } : {}),
      },
    );
    this.live.set(id, sandbox);
    this.unregister ??= registerExitCleanup({
      removeAllSync: () => {
        const ids = [...this.live.keys()];
        const left = new Set(ids.length ? this.engine.removeContainersSync(ids, 10_000) : []);
        // The removed ones' overlays are applied or thrown away now, synchronously; one whose
        // container could not be removed is left on disk for the sweep (it may still write there).
        for (const s of this.live.values()) if (!left.has(s.id)) s.settleOverlaySync();
        this.live.clear();
      },
      removeAll: () => this.stopAll(),
    });
    try {
      await this.engine.startContainer(id);
      abortCheck();
      await verifyMounts(sandbox, identities);
      if (project?.overlay) {
        const lease = new Lease(project.overlay.lease, this.leaseSeconds);
        this.leases.set(id, lease);
        await lease.start(this.engine, id);
      }
      this.armExpiry(sandbox);
    } catch (e) {
      await sandbox.stop().catch((stopError: unknown) => swallowed('removing a container that did not start', stopError));
      throw e;
    }
    return sandbox;
  }

  /**
   * The expiry, enforced by this process as well as inside the container: a command can
   * stop the container's keep-alive (SIGSTOP) so that it never ends by itself. While this
   * process lives, it removes the container once its expiry is EXPIRY_GRACE_MS past (the
   * time the sweep also leaves it to end by itself: its keep-alive ends a moment after the
   * label's time); if it dies, its exit hook or the next sweep does. The timer keeps
   * nothing alive.
   */
  private armExpiry(sandbox: Sandbox): void {
    const timer = setTimeout(
      () => {
        void sandbox.stop().catch((e: unknown) => swallowed(`removing ${sandbox.name} at its expiry`, e));
      },
      Math.max(0, sandbox.info.expiresAt.getTime() + EXPIRY_GRACE_MS - Date.now()),
    );
    timer.unref();
    this.expiries.set(sandbox.id, timer);
  }

  private forget(id: string): void {
    this.live.delete(id);
    this.leases.get(id)?.stop();
    this.leases.delete(id);
    clearTimeout(this.expiries.get(id));
    this.expiries.delete(id);
  }

  /** How the disk limit is enforced on this manager's engine ('unknown' before a first start). */
  get diskEnforcement(): 'engine' | 'measured' | 'unknown' {
    return diskQuotas.get(this.engineKey()) ?? 'unknown';
  }

  /** The engine as a key: its address where it has one (every manager of the process shares what is learned). */
  private engineKey(): object | string {
    return this.engine.connection?.endpoint ?? this.engine;
  }

  /** Creates the container with the engine's disk quota where it has one; else without, measured instead. */
  private async createWithDiskLimit(spec: ContainerSpec, diskBytes: number): Promise<string> {
    const key = this.engineKey();
    // Tried only where the storage driver can have quotas: elsewhere the engine would create
    // the container and destroy it again, which anyone watching its events would see.
    if (!diskQuotas.has(key) && !quotaPossible((await this.engine.info()).storage)) diskQuotas.set(key, 'measured');
    if (diskQuotas.get(key) !== 'measured') {
      try {
        const id = await this.engine.createContainer({ ...spec, diskBytes });
        diskQuotas.set(key, 'engine');
        return id;
      } catch (e) {
        if (!(e instanceof SandboxError && e.data.noDiskQuota)) throw e;
        swallowed('no disk quota on this storage driver: the disk limit is measured', e);
        diskQuotas.set(key, 'measured');
      }
    }
    // Measured: one file, however fast it is written, stops at the limit (the watch covers many files).
    return this.engine.createContainer({ ...spec, fileSizeLimitBytes: diskBytes });
  }

  /**
   * The project's binds for a start, or undefined for none. A writable mount is refused when
   * the log folder is inside the project (policy: the log folder is never in a writable mount).
   * @throws SandboxError POLICY_VIOLATION
   */
  private projectBinds(mount: ProjectMount, mounts: ReadonlyArray<{ containerPath: string }>, name: string): ProjectBinds | undefined {
    const c = this.config;
    if (mount === 'none') return undefined;
    // Checked as the writable mount it amounts to (the log folder may not be inside a project the container changes).
    const writable = mount === 'rw';
    const [checked] = checkMounts(
      [{ hostPath: c.projectRoot, containerPath: c.workdir, writable }],
      [{ hostPath: c.projectRoot, writable }],
      { ...this.engineSocket(), logsDir: this.logs.rootDir },
    );
    if (!checked) throw new SandboxError('INVALID_ARGUMENT', 'The project could not be checked for mounting.');
    if (mounts.some((m) => isWithin(m.containerPath, c.workdir) || isWithin(c.workdir, m.containerPath)))
      throw new SandboxError('INVALID_ARGUMENT', `A mount at or around ${c.workdir} cannot go with the project, which is mounted there.`);
    const owner = currentOwner();
    return projectBinds(checked.hostPath, c.workdir, mount, this.logs.rootDir, { name, owner: `${owner.host}:${owner.pid}` });
  }

  /** Stops every live sandbox of this manager. */
  async stopAll(): Promise<void> {
    await Promise.allSettled(this.list().map((s) => s.stop()));
  }

  /**
   * Sweeps every `ms` while this process runs (the timer never keeps it alive), beside the
   * start-up sweep; a failed sweep is recorded and retried at the next tick.
   */
  sweepEvery(ms: number): void {
    if (this.sweepTimer) clearInterval(this.sweepTimer);
    this.sweepTimer = setInterval(() => {
      this.sweep().catch((e: unknown) => swallowed('periodic sweep', e));
    }, ms);
    this.sweepTimer.unref();
  }

  /** The start-up sweep, by hand. */
  async sweep(options: { all?: boolean; dryRun?: boolean } = {}): Promise<SweepReport> {
    const report = await sweepContainers(this.engine, { ...options, keep: new Set(this.live.keys()) });
    if (!options.dryRun) report.overlays = await settleOrphanOverlays(this.engine, this.logs.rootDir);
    return report;
  }

  private engineSocket(): { engineSocket?: string } {
    const c = this.engine.connection;
    return c?.kind === 'socket' ? { engineSocket: c.socketPath } : {};
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.stopAll();
    this.unregister?.();
  }
}
