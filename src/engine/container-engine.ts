import type { NetworkMode } from '../policy/policy.js';
import type { EngineConnection } from './connection.js';

/**
 * The narrow port in front of a container engine. The sandbox layer speaks only this;
 * `docker-engine.ts` implements it with dockerode, unit tests with a typed fake.
 * Engine status codes never cross this line: the adapter turns them into SandboxErrors
 * or into plain results (a container already gone is `false`, not an error).
 */

export interface EngineInfo {
  /** Engine product version, e.g. "20.10.24". */
  version: string;
  apiVersion: string;
  os: string;
  /** "docker" or "podman", from the version components; "kubernetes" for a cluster's API server. */
  kind: 'docker' | 'podman' | 'kubernetes' | 'unknown';
  cgroupVersion: '1' | '2' | 'unknown';
  /** The engine runs as a user without root (rootless Podman or Docker), where it says. */
  rootless?: boolean;
  /** How we reached it, e.g. "unix:///var/run/docker.sock". */
  endpoint: string;
  /** The storage driver ("overlay2", "btrfs", ...) and what it is on ("extfs", "xfs"), where the engine says. */
  storage?: { driver: string; backingFilesystem?: string };
}

export interface PullProgress {
  /** Layer id or the image reference. */
  id: string;
  status: string;
  current?: number;
  total?: number;
}

/** A local image, as `images list` shows it. */
export interface ImageInfo {
  sizeBytes: number;
  /** When it was built, where the engine says. */
  createdAt?: Date;
}

export interface PullOptions {
  /** Nobody waits on this pull (a pre-pull): its connection does not keep the process alive. */
  background?: boolean;
}

export interface TmpfsMount {
  path: string;
  sizeBytes: number;
}

export interface BindMount {
  hostPath: string;
  containerPath: string;
  readOnly: boolean;
}

export interface OverlayVolume {
  containerPath: string;
  lowerDir: string;
  upperDir: string;
  /** The kernel's work folder, on the upper folder's file system. */
  workDir: string;
}

/**
 * Everything a container may be created with. There is deliberately no field for
 * privileged mode, host namespaces, devices or extra security options: the adapter
 * always sets no-new-privileges, an init process, drops every capability and adds back
 * exactly `capAdd` (the policy decides which: policy/policy.ts).
 */
export interface ContainerSpec {
  image: string;
  name?: string;
  entrypoint: string[];
  cmd: string[];
  env: string[];
  labels: Record<string, string>;
  workdir: string;
  user?: string;
  memoryBytes: number;
  nanoCpus: number;
  pidsLimit: number;
  network: NetworkMode;
  /** Container ports (tcp) published on the host's 127.0.0.1 only, each to a port the engine picks. */
  publishPorts?: number[];
  readOnlyRoot: boolean;
  tmpfs: TmpfsMount[];
  /**
   * Memory-backed folders the engine's archive API reaches: tmpfs volumes, created with the
   * container and removed with it (a plain tmpfs mount is invisible to that API, which
   * would write beneath it). Labelled as the container is.
   */
  tmpfsVolumes?: TmpfsMount[];
  binds: BindMount[];
  /**
   * Overlays the engine mounts (as root, at the container's start): `lowerDir` read-only
   * below, every write landing in `upperDir` (a folder of ours). Removed with the container.
   */
  overlayVolumes?: OverlayVolume[];
  capAdd: string[];
  /** Quota of the writable layer, where the storage driver has them (StorageOpt size). */
  diskBytes?: number;
  /**
   * The largest file any process may write (RLIMIT_FSIZE, for every exec too): where the
   * writable layer has no quota, one file can then never pass the disk limit, however fast
   * it is written; a process that tries gets SIGXFSZ.
   */
  fileSizeLimitBytes?: number;
  /** Remove the container as soon as its main process ends (dead-man switch). */
  autoRemove: boolean;
  /** When the engine itself must end the container, where it can (a cluster's activeDeadlineSeconds). */
  expiresAt?: Date;
}

export interface ContainerSummary {
  id: string;
  names: string[];
  image: string;
  labels: Record<string, string>;
  state: string;
  createdAt: Date;
}

export interface ContainerState {
  id: string;
  name: string;
  running: boolean;
  status: string;
  oomKilled: boolean;
  exitCode: number | null;
  labels: Record<string, string>;
  /** The container's working folder, where the engine says. */
  workdir?: string;
  /** Published ports: a container port (tcp) and the host address that reaches it (`127.0.0.1:49153`). */
  ports?: Record<string, string>;
}

/** A path in a container as the engine's archive API sees it (its parents resolved, the path itself not). */
export interface PathStat {
  type: 'file' | 'dir' | 'link' | 'other';
  size: number;
  /** Where a link leads, resolved by the engine inside the container. */
  linkTarget?: string;
}

export type StreamId = 'stdout' | 'stderr';

/** A command's stdin: bytes, or a stream of them (a long-lived command's requests). */
export type ExecInput = Buffer | AsyncIterable<Buffer>;

export interface ExecSpec {
  cmd: string[];
  env?: string[];
  workdir?: string;
  user?: string;
  /**
   * Bytes for the command's stdin, then end of input. Without it the command has no stdin.
   * A stream is written as it gives bytes, and the input ends with it: a long-lived command
   * can take requests.
   */
  stdin?: ExecInput;
  /** Nobody waits on this command all the time (a long-lived helper): its connection does not keep the process alive. */
  background?: boolean;
}

/**
 * A started exec. Output arrives frame by frame through `onOutput`, already demultiplexed.
 * A chunk is a view into the adapter's reused read buffer, valid only during the call:
 * a consumer copies what it keeps (not copying every byte again is what makes large outputs
 * cheap). `done` resolves when the output stream has ended, with the exit code from the
 * engine (null if it could not be read).
 */
export interface ExecSession {
  done: Promise<{ exitCode: number | null }>;
  /** Stops reading the output (the process keeps running: the engine cannot kill it). */
  detach(): void;
}

export interface ContainerEngine {
  /**
   * How the engine is reached. Its unix socket, when it has one, is never mountable into a
   * container, wherever it lives. Absent for an engine with no address of its own.
   */
  readonly connection?: EngineConnection;
  /**
   * Why this engine cannot mount the host's folders, where it cannot (a cluster's pods run on
   * other machines): a start that asks for one is refused with this sentence.
   */
  readonly hostMountRefusal?: string;
  /** @throws SandboxError ENGINE_UNAVAILABLE with a sentence on how to start an engine. */
  info(): Promise<EngineInfo>;
  hasImage(ref: string): Promise<boolean>;
  /** @returns undefined when the image is not present. */
  inspectImage(ref: string): Promise<ImageInfo | undefined>;
  /** @throws SandboxError IMAGE_NOT_FOUND when the registry has no such image or tag. */
  pullImage(ref: string, onProgress?: (p: PullProgress) => void, signal?: AbortSignal, options?: PullOptions): Promise<void>;
  /** @returns the new container's id. */
  createContainer(spec: ContainerSpec): Promise<string>;
  startContainer(id: string): Promise<void>;
  /** @returns false if the container did not exist. Not running is fine. */
  stopContainer(id: string, graceSeconds: number): Promise<boolean>;
  /**
   * Resolves once the container is gone; a removal already in progress (auto-remove) is
   * waited for. @returns false if the container did not exist.
   */
  removeContainer(id: string, force: boolean): Promise<boolean>;
  /** Bytes in the container's writable layer; undefined if it does not exist. */
  diskUsage(id: string): Promise<number | undefined>;
  /** @returns undefined if the container does not exist. */
  inspectContainer(idOrName: string): Promise<ContainerState | undefined>;
  listContainers(labels: Record<string, string>): Promise<ContainerSummary[]>;
  exec(containerId: string, spec: ExecSpec, onOutput: (stream: StreamId, chunk: Buffer) => void): Promise<ExecSession>;
  /**
   * What the archive API sees at `path` (absolute, in the container).
   * @returns undefined when there is nothing there.
   */
  statPath(id: string, path: string): Promise<PathStat | undefined>;
  /**
   * Extracts a tar archive into the folder `path` through the engine's archive API. The
   * engine writes as root, following links inside the container, with the owners and modes
   * the archive names. An entry may not replace a folder with a non-folder, or the reverse.
   * A stream is sent as it gives bytes.
   * @throws SandboxError FILE_OPERATION_FAILED with the engine's reason
   */
  extractArchive(id: string, path: string, archive: Buffer | AsyncIterable<Buffer>): Promise<void>;
  /**
   * Removes containers synchronously (force). For process-exit hooks only, where no
   * asynchronous work can run. Best effort; returns the ids it could not remove.
   */
  removeContainersSync(ids: string[], timeoutMs: number): string[];
  /**
   * Project overlays that outlive their containers (Podman's named volumes; none elsewhere),
   * with their labels, so that a sweep can remove those of gone owners.
   */
  listOverlayVolumes(labels: Record<string, string>): Promise<Array<{ name: string; labels: Record<string, string> }>>;
  /** Removes such a volume unless it is in use. @returns whether it was removed */
  removeVolume(name: string): Promise<boolean>;
}
