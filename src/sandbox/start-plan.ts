import type { Config } from '../config/config-schema.js';
import type { BindMount, ContainerEngine, ContainerSpec, PullProgress, TmpfsMount } from '../engine/container-engine.js';
import { SandboxError } from '../errors.js';
import { missingImageError } from '../images/golden-images.js';
import { pullFlights } from '../images/pull-flights.js';
import { isWithin } from '../paths.js';
import {
  checkConfigInvariants,
  checkContainerName,
  checkImageAllowed,
  checkMounts,
  checkProjectMount,
  containerCapabilities,
  imageMatches,
  type AddableCapability,
  type MountRequest,
  type NetworkMode,
  type ProjectMount,
} from '../policy/policy.js';
import { checkOverlayEngine, projectBinds, type ProjectBinds } from '../project/project-mount.js';
import { containerUser } from './container-user.js';
import { containerLabels, currentOwner } from './labels.js';
import { LEASE_IN_CONTAINER } from './lease.js';
import { hostIdentity } from './mount-identity.js';
import { checkOptions, StartOptionsSchema } from './option-schemas.js';

/**
 * The steps of a start that decide what to start, each a function of the configuration and
 * the request: the image, the policy, the project's mount, the image present, the mounts
 * and user, the container's spec. SandboxManager.start runs them in that order, then
 * creates, starts and tracks the container.
 */

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

/** What the mount checks know of the host: the engine's socket (never mountable) and the log folder (never writable). */
export interface MountContext {
  engineSocket?: string;
  logsDir: string;
}

export type CheckedMount = ReturnType<typeof checkMounts>[number];

/** The image of a start, on the allowlist. @throws SandboxError IMAGE_NOT_ALLOWED */
export function chooseImage(c: Config, options: StartOptions): string {
  const image = options.image ?? c.images.default;
  checkImageAllowed(image, c.images.allow, c.images.projectAllow);
  return image;
}

/** The request against the policy: invariants, the name, the options' bounds, each mount on the allowlist. @throws SandboxError POLICY_VIOLATION, INVALID_ARGUMENT */
export function checkStartPolicy(c: Config, options: StartOptions, ctx: MountContext): CheckedMount[] {
  checkConfigInvariants(options, 'start options');
  if (options.name !== undefined) checkContainerName(options.name);
  checkOptions(StartOptionsSchema, options, 'start options');
  return checkMounts(options.mounts ?? [], c.mountAllow, ctx);
}

/**
 * The project's binds for a start, or undefined for none: at most config.project.mount, an
 * engine that can mount its overlay, no other mount at or around it. A writable mount is
 * refused when the log folder is inside the project (policy: the log folder is never in a
 * writable mount).
 * @throws SandboxError POLICY_VIOLATION, INVALID_ARGUMENT
 */
export async function prepareProjectMount(
  c: Config,
  engine: ContainerEngine,
  request: { project: ProjectMount | undefined; mounts: readonly CheckedMount[]; name: string },
  ctx: MountContext,
): Promise<ProjectBinds | undefined> {
  const mount = checkProjectMount(request.project ?? 'none', c.project.mount);
  if (mount === 'none') return undefined;
  if (mount === 'rw' || mount === 'scratch') await checkOverlayEngine(engine, mount);
  // Checked as the writable mount it amounts to (the log folder may not be inside a project the container changes).
  const writable = mount === 'rw';
  const [checked] = checkMounts(
    [{ hostPath: c.projectRoot, containerPath: c.workdir, writable }],
    [{ hostPath: c.projectRoot, writable }],
    ctx,
  );
  if (!checked) throw new SandboxError('INVALID_ARGUMENT', 'The project could not be checked for mounting.');
  if (request.mounts.some((m) => isWithin(m.containerPath, c.workdir) || isWithin(c.workdir, m.containerPath)))
    throw new SandboxError('INVALID_ARGUMENT', `A mount at or around ${c.workdir} cannot go with the project, which is mounted there.`);
  const owner = currentOwner();
  return projectBinds(checked.hostPath, c.workdir, mount, ctx.logsDir, { name: request.name, owner: `${owner.host}:${owner.pid}` });
}

/**
 * The container's user and binds, with what each bind must still be once the engine has
 * mounted it: taken now, at the check (on a local engine; a remote one's paths are not ours).
 */
export function planMounts(
  c: Config,
  engine: ContainerEngine,
  mounts: readonly CheckedMount[],
  project: ProjectBinds | undefined,
): { user: string | undefined; binds: BindMount[]; identities: Array<BindMount & { identity: ReturnType<typeof hostIdentity> }> } {
  const user = containerUser(c, [...mounts, ...(project ? [{ hostPath: project.hostRoot, writable: project.mount !== 'ro' }] : [])]);
  const binds = [
    ...mounts.map((m) => ({ hostPath: m.hostPath, containerPath: m.containerPath, readOnly: !m.writable })),
    ...(project?.binds ?? []),
  ];
  const identities = engine.connection?.kind === 'socket' ? binds.map((m) => ({ ...m, identity: hostIdentity(m.hostPath) })) : [];
  return { user, binds, identities };
}

/**
 * The image present: a missing one is pulled (a pull of it under way, the pre-pull's or
 * another start's, is waited for, not repeated), unless it is local only or pulls are off.
 * @throws SandboxError IMAGE_NOT_FOUND, IMAGE_PULL_FAILED, ABORTED
 */
export async function ensureImage(c: Config, engine: ContainerEngine, image: string, options: StartOptions): Promise<void> {
  if (await engine.hasImage(image)) return;
  if (imageMatches(image, c.images.localOnly) || !c.images.pull) throw missingImageError(c, image);
  await pullFlights.pull(engine, image, {
    ...(options.onPullProgress ? { onProgress: options.onPullProgress } : {}),
    ...(options.signal ? { signal: options.signal } : {}),
  });
}

/** What the engine is asked to create, and the facts of it the sandbox keeps. */
export interface ContainerPlan {
  spec: ContainerSpec;
  image: string;
  name: string;
  workdir: string;
  createdAt: Date;
  expiresAt: Date;
  readOnlyRoot: boolean;
  memoryBytes: number;
  pidsLimit: number;
}

/** The container's spec: the request's options over the configuration's, with the dead-man switch and the labels. */
export function containerSpec(
  c: Config,
  sessionId: string,
  options: StartOptions,
  o: { image: string; name: string; user: string | undefined; binds: BindMount[]; project: ProjectBinds | undefined },
): ContainerPlan {
  const { image, name, user, binds, project } = o;
  const workdir = options.workdir ?? c.workdir;
  // A numeric user the image may not know has no home: tools that keep caches there (pip, go, npm) need one.
  const env = { ...(project && project.mount !== 'ro' ? { HOME: '/tmp' } : {}), ...options.env };
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
  const network = options.network ?? c.network;
  const pidsLimit = options.pids ?? c.limits.pids;
  const spec: ContainerSpec = {
    image,
    name,
    // Dead-man switch: the keep-alive process ends at expiry, and auto-remove deletes the container.
    entrypoint: ['sleep'],
    cmd: [String(ttl)],
    env: Object.entries(env).map(([k, v]) => `${k}=${v}`),
    labels: containerLabels(sessionId, currentOwner(), createdAt, expiresAt),
    workdir,
    ...(user ? { user } : {}),
    memoryBytes,
    nanoCpus: Math.round((options.cpus ?? c.limits.cpus) * 1e9),
    pidsLimit,
    network,
    ...(network === 'bridge' && c.publishPorts.length ? { publishPorts: c.publishPorts } : {}),
    readOnlyRoot,
    tmpfs,
    ...(tmpfsVolumes.length ? { tmpfsVolumes } : {}),
    // The lease file is not checked as a mount: it is a file of ours, read-only, outside the working folder.
    binds: project?.overlay ? [...binds, { hostPath: project.overlay.lease, containerPath: LEASE_IN_CONTAINER, readOnly: true }] : binds,
    ...(project?.overlay ? { overlayVolumes: [project.overlay.volume] } : {}),
    capAdd: containerCapabilities((options.capAdd ?? c.capAdd).filter((cap) => c.capAdd.includes(cap))),
    autoRemove: true,
    expiresAt,
  };
  return { spec, image, name, workdir, createdAt, expiresAt, readOnlyRoot, memoryBytes, pidsLimit };
}
