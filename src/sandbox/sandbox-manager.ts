import { randomBytes } from 'node:crypto';
import type { Config } from '../config/config-schema.js';
import type { ContainerEngine } from '../engine/container-engine.js';
import { boundedEngine } from '../engine/bounded-engine.js';
import { createEngine, refuseHostMounts } from '../engine/create-engine.js';
import { SandboxError } from '../errors.js';
import { LogStore } from '../capture/log-store.js';
import { registerExitCleanup } from './exit-hook.js';
import { verifyMounts } from './mount-identity.js';
import { Sandbox } from './sandbox.js';
import type { SandboxInfo } from './sandbox-types.js';
import { EXPIRY_GRACE_MS, sweepContainers, type SweepReport } from './sweep.js';
import { swallowed } from '../debug.js';
import { checkProjectMount } from '../policy/policy.js';
import type { Clock } from '../retry.js';
import { checkHostPathsLocal, type ProjectBinds } from '../project/project-mount.js';
import { removeProjectOverlay } from '../project/project-overlay.js';
import { settleOrphanOverlays } from './overlay-orphans.js';
import { DEFAULT_LEASE_SECONDS, Lease } from './lease.js';
import { createWithDiskLimit, diskEnforcement } from './disk-quota.js';
import {
  checkStartPolicy,
  chooseImage,
  containerSpec,
  ensureImage,
  planMounts,
  prepareProjectMount,
  type CheckedMount,
  type ContainerPlan,
  type MountContext,
  type StartOptions,
} from './start-plan.js';

export type { StartOptions } from './start-plan.js';

export interface SandboxManagerOptions {
  config: Config;
  /** @default the engine config.engine names (createEngine) */
  engine?: ContainerEngine;
  /** @default a new time-sortable id */
  sessionId?: string;
  /** Remove stale containers (dead owner, past expiry) before the first start. @default true */
  sweepOnStart?: boolean;
  /** The lease of a container with a project overlay, in seconds (lease.ts). @default 180 */
  leaseSeconds?: number;
  /** What each sandbox's waits wait on (src/retry.ts); a unit test's clock shortens them. @default systemClock */
  clock?: Clock;
}

export { BUILD_OFFLINE_SCRIPT } from '../images/golden-images.js';

/** A session id that sorts by time and names a log folder: 20261122-031500-a1b2c3. */
export function newSessionId(now = new Date()): string {
  const t = now.toISOString().replace(/[-:]/g, '').replace('T', '-').slice(0, 15);
  return `${t}-${randomBytes(3).toString('hex')}`;
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
  private readonly clock: Clock | undefined;
  /** The leases of the live containers with a project overlay. */
  private readonly leases = new Map<string, Lease>();

  constructor(options: SandboxManagerOptions) {
    this.config = options.config;
    // Every call about one container bounded: a container that froze the engine's own processes never holds a start, a command or a stop.
    this.engine = boundedEngine(options.engine ?? createEngine(options.config.engine));
    this.sessionId = options.sessionId ?? newSessionId();
    this.sweepOnStart = options.sweepOnStart ?? true;
    this.leaseSeconds = options.leaseSeconds ?? DEFAULT_LEASE_SECONDS;
    this.clock = options.clock;
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
    const image = chooseImage(this.config, options);
    const mounts = checkStartPolicy(this.config, options, this.mountContext());
    const name = options.name ?? `${this.config.containerPrefix}${this.sessionId.slice(-6)}-${++this.seq}`;
    // An engine that cannot reach host folders (a cluster) refuses them before anything is made.
    refuseHostMounts(this.engine, (options.project ?? 'none') !== 'none' || mounts.length > 0);
    // A remote engine's host paths are another machine's: refused too, with its own sentence.
    checkHostPathsLocal(this.engine, checkProjectMount(options.project ?? 'none', this.config.project.mount), mounts.length);
    const project = await prepareProjectMount(this.config, this.engine, { project: options.project, mounts, name }, this.mountContext());
    try {
      return await this.startWith(options, { image, name, mounts, project });
    } catch (e) {
      if (project?.overlay && ![...this.live.values()].some((s) => s.name === name)) removeProjectOverlay(project.overlay.dir);
      throw e;
    }
  }

  /** The start once it is decided: sweep, image, create, track, start, check, lease, expiry. */
  private async startWith(
    options: StartOptions,
    o: { image: string; name: string; mounts: CheckedMount[]; project: ProjectBinds | undefined },
  ): Promise<Sandbox> {
    const { user, binds, identities } = planMounts(this.config, this.engine, o.mounts, o.project);
    const abortCheck = () => {
      if (options.signal?.aborted) throw new SandboxError('ABORTED', 'Start aborted.');
    };
    abortCheck();
    await this.sweptOnce();
    await ensureImage(this.config, this.engine, o.image, options);
    abortCheck();
    const plan = containerSpec(this.config, this.sessionId, options, { image: o.image, name: o.name, user, binds, project: o.project });
    const id = await createWithDiskLimit(this.engine, plan.spec, this.config.limits.disk);
    // Tracked before start, so the exit hook covers the window between create and start.
    const sandbox = this.track(this.newSandbox(id, plan, user, o.project));
    try {
      await this.engine.startContainer(id);
      abortCheck();
      await verifyMounts(sandbox, identities);
      if (plan.spec.publishPorts?.length) {
        const ports = (await this.engine.inspectContainer(id))?.ports ?? {};
        // A port not on 127.0.0.1 alone (the engine ignored the binding asked for) may be reachable from anywhere.
        const elsewhere = plan.spec.publishPorts.filter((port) => !ports[String(port)]);
        if (elsewhere.length)
          throw new SandboxError(
            'POLICY_VIOLATION',
            `The engine did not publish port ${elsewhere.join(', ')} on 127.0.0.1 only, as asked (it may be reachable from other machines): the container was removed. Check the engine's port publishing, or remove publishPorts.`,
            { data: { rule: 'publishPorts' } },
          );
        // Known only once it runs (the engine picks the host ports): the one field set after the handle is made.
        (sandbox.info as SandboxInfo).ports = ports;
      }
      if (o.project?.overlay) await this.holdLease(id, o.project.overlay.lease);
      this.armExpiry(sandbox);
    } catch (e) {
      await sandbox.stop().catch((stopError: unknown) => swallowed('removing a container that did not start', stopError));
      throw e;
    }
    return sandbox;
  }

  /** The start-up sweep, once per manager before its first start; a failed one does not block work (`cleanup` reports it), an engine that does not answer does. */
  private async sweptOnce(): Promise<void> {
    if (!this.sweepOnStart) return;
    this.swept ??= this.sweep().catch((e: unknown) => {
      if (e instanceof SandboxError && e.code === 'ENGINE_UNAVAILABLE') throw e;
      return undefined;
    });
    try {
      await this.swept;
    } catch (e) {
      this.swept = undefined;
      throw e;
    }
  }

  /** The handle of a created container. */
  private newSandbox(id: string, plan: ContainerPlan, user: string | undefined, project: ProjectBinds | undefined): Sandbox {
    const c = this.config;
    const ids = user !== undefined ? /^(\d+):(\d+)$/.exec(user) : null;
    const { name, image } = plan;
    return new Sandbox(
      {
        id,
        name,
        image,
        sessionId: this.sessionId,
        workdir: plan.workdir,
        createdAt: plan.createdAt,
        expiresAt: plan.expiresAt,
        memoryBytes: plan.memoryBytes,
        pidsLimit: plan.pidsLimit,
        ...(ids ? { userIds: { uid: Number(ids[1]), gid: Number(ids[2]) } } : {}),
        ...(project ? { project: { hostRoot: project.hostRoot, containerRoot: project.containerRoot, mount: project.mount } } : {}),
      },
      {
        engine: this.engine,
        logs: this.logs,
        exec: c.exec,
        files: c.files,
        // A read-only root has no writable layer to grow: nothing to measure (its tmpfs mounts have their own size).
        disk: { limitBytes: c.limits.disk, measured: this.diskEnforcement !== 'engine' && !plan.readOnlyRoot },
        onStopped: (s) => this.forget(s.id),
        ...(this.clock ? { clock: this.clock } : {}),
        ...(project?.overlay ? { overlay: { dir: project.overlay.dir, upper: project.overlay.upper } } : {}),
      },
    );
  }

  /** Tracks a sandbox as live, with the exit hook armed for every live one. */
  private track(sandbox: Sandbox): Sandbox {
    this.live.set(sandbox.id, sandbox);
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
    return sandbox;
  }

  /** The lease of a container with a project overlay (lease.ts), renewed while it lives. */
  private async holdLease(id: string, leaseFile: string): Promise<void> {
    const lease = new Lease(leaseFile, this.leaseSeconds);
    this.leases.set(id, lease);
    await lease.start(this.engine, id);
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
    return diskEnforcement(this.engine);
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

  /** What the mount checks know of this host: the engine's socket (never mountable), the log folder (never writable). */
  private mountContext(): MountContext {
    const c = this.engine.connection;
    return { ...(c?.kind === 'socket' ? { engineSocket: c.socketPath } : {}), logsDir: this.logs.rootDir };
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.stopAll();
    this.unregister?.();
  }
}
