import { readFileSync } from 'node:fs';
import net from 'node:net';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import Docker from 'dockerode';
import { SandboxError } from '../errors.js';
import type {
  ContainerEngine,
  ContainerSpec,
  ContainerState,
  ContainerSummary,
  EngineInfo,
  ExecSession,
  ExecSpec,
  ImageInfo,
  PathStat,
  PullOptions,
  PullProgress,
  StreamId,
} from './container-engine.js';
import { engineUnavailableMessage, resolveConnection, type ConnectionSettings, type EngineConnection } from './connection.js';
import { FrameDemuxer } from './demux.js';
import './no-redirects.js';
import { containerGoneError, isGone } from './container-gone.js';
import { asHttpError, containerGone, engineMessage, UNREACHABLE, type EngineHttpError } from './engine-errors.js';
import { readPullProgress } from './pull-progress.js';
import { removeContainersSync } from './remove-sync.js';
import { ExecStartError, openExecStream, type EngineTransport, type ExecStream } from './exec-stream.js';

/** How long removeContainer waits for a removal already in progress (auto-remove) to end. */
const REMOVAL_WAIT_MS = 10_000;

function dockerOptions(conn: EngineConnection): Docker.DockerOptions {
  if (conn.kind === 'socket') return { socketPath: conn.socketPath };
  if (conn.protocol === 'http') return { host: conn.host, port: conn.port, protocol: 'http' };
  const read = (f: string) => {
    try {
      return readFileSync(join(conn.certPath ?? '', f));
    } catch (e) {
      throw new SandboxError(
        'INVALID_CONFIG',
        `TLS is on (DOCKER_TLS_VERIFY) but ${join(conn.certPath ?? '', f)} cannot be read: ${(e as Error).message}`,
      );
    }
  };
  return { host: conn.host, port: conn.port, protocol: 'https', ca: read('ca.pem'), cert: read('cert.pem'), key: read('key.pem') };
}

/** The raw connection exec output is read over: the same engine and TLS material as dockerode's. */
function execTransport(conn: EngineConnection, options: Docker.DockerOptions): EngineTransport {
  if (conn.kind === 'socket') return { kind: 'net', options: { path: conn.socketPath }, hostHeader: 'localhost' };
  const hostHeader = `${conn.host.includes(':') ? `[${conn.host}]` : conn.host}:${conn.port}`;
  if (conn.protocol === 'http') return { kind: 'net', options: { host: conn.host, port: conn.port }, hostHeader };
  return {
    kind: 'tls',
    options: {
      host: conn.host,
      port: conn.port,
      ca: options.ca,
      cert: options.cert,
      key: options.key,
      ...(net.isIP(conn.host) ? {} : { servername: conn.host }),
    },
    hostHeader,
  };
}

/** The storage driver and its backing filesystem, from the engine's info. */
function storageOf(info: Record<string, unknown>): { storage?: { driver: string; backingFilesystem?: string } } {
  if (typeof info.Driver !== 'string') return {};
  const status = Array.isArray(info.DriverStatus) ? (info.DriverStatus as unknown[]) : [];
  const backing = status.find((row): row is [string, string] => Array.isArray(row) && row[0] === 'Backing Filesystem')?.[1];
  return { storage: { driver: info.Driver, ...(typeof backing === 'string' ? { backingFilesystem: backing } : {}) } };
}

// Go's os.FileMode type bits, as the archive API's stat header carries them.
const MODE_DIR = 2 ** 31;
const MODE_SYMLINK = 2 ** 27;
const MODE_TYPE = MODE_DIR | MODE_SYMLINK | (2 ** 26) | (2 ** 25) | (2 ** 24) | (2 ** 21) | (2 ** 19);

/** The archive API's `X-Docker-Container-Path-Stat` header (base64 JSON); undefined when unreadable. */
export function parsePathStat(header: string | undefined): PathStat | undefined {
  if (!header) return undefined;
  let v: unknown;
  try {
    v = JSON.parse(Buffer.from(header, 'base64').toString('utf8'));
  } catch {
    return undefined;
  }
  if (typeof v !== 'object' || v === null) return undefined;
  const { mode, size, linkTarget } = v as { mode?: unknown; size?: unknown; linkTarget?: unknown };
  if (typeof mode !== 'number' || !Number.isInteger(mode) || mode < 0 || mode >= 2 ** 32) return undefined;
  const type = (mode & MODE_TYPE) >>> 0;
  return {
    type: type === 0 ? 'file' : type === MODE_DIR ? 'dir' : type === MODE_SYMLINK ? 'link' : 'other',
    size: typeof size === 'number' && Number.isSafeInteger(size) && size >= 0 ? size : 0,
    ...(typeof linkTarget === 'string' && linkTarget !== '' ? { linkTarget } : {}),
  };
}

/** The container is gone: CONTAINER_NOT_FOUND, said the same way by every method. */
function goneError(containerId: string, cause: unknown): SandboxError {
  return containerGoneError({ id: containerId }, 'it was stopped, removed or reached its expiry', { cause });
}

/** The dockerode adapter, one method per port method (hence its length): the only place that knows the Docker API's shapes and status codes. */
export class DockerEngine implements ContainerEngine {
  readonly connection: EngineConnection;
  private readonly docker: Docker;
  private readonly transport: EngineTransport;

  constructor(settings: ConnectionSettings = {}, env: NodeJS.ProcessEnv = process.env) {
    this.connection = resolveConnection(settings, env);
    const options = dockerOptions(this.connection);
    this.docker = new Docker(options);
    this.transport = execTransport(this.connection, options);
  }

  /** Translates an engine failure into a SandboxError; unreachable engines get the how-to sentence. */
  private fail(e: unknown, context: string): SandboxError {
    if (e instanceof SandboxError) return e;
    const err = asHttpError(e);
    if (err.code && UNREACHABLE.has(err.code)) {
      return new SandboxError('ENGINE_UNAVAILABLE', engineUnavailableMessage(this.connection.endpoint, err.code), { cause: e });
    }
    if (err.code === 'ABORT_ERR' || (e as Error)?.name === 'AbortError') {
      return new SandboxError('ABORTED', `${context}: aborted`, { cause: e });
    }
    return new SandboxError('ENGINE_ERROR', `${context}: ${engineMessage(err)}`, {
      cause: e,
      data: err.statusCode ? { status: err.statusCode } : {},
    });
  }

  async info(): Promise<EngineInfo> {
    try {
      const [version, info] = await Promise.all([this.docker.version(), this.docker.info() as Promise<Record<string, unknown>>]);
      const components = (version as { Components?: Array<{ Name?: string }> }).Components ?? [];
      const kind = components.some((c) => /podman/i.test(c.Name ?? '')) ? 'podman' : components.length > 0 ? 'docker' : 'unknown';
      const cg = String(info.CgroupVersion ?? (info.host as { cgroupVersion?: string } | undefined)?.cgroupVersion ?? '');
      return {
        version: version.Version,
        apiVersion: version.ApiVersion,
        os: `${version.Os}/${version.Arch}`,
        kind,
        cgroupVersion: cg === '1' || cg === 'v1' ? '1' : cg === '2' || cg === 'v2' ? '2' : 'unknown',
        endpoint: this.connection.endpoint,
        ...storageOf(info),
      };
    } catch (e) {
      throw this.fail(e, 'Engine info');
    }
  }

  async hasImage(ref: string): Promise<boolean> {
    try {
      await this.docker.getImage(ref).inspect();
      return true;
    } catch (e) {
      if (asHttpError(e).statusCode === 404) return false;
      throw this.fail(e, `Inspect image ${ref}`);
    }
  }

  async inspectImage(ref: string): Promise<ImageInfo | undefined> {
    let image: { Size?: unknown; Created?: unknown };
    try {
      image = (await this.docker.getImage(ref).inspect()) as typeof image;
    } catch (e) {
      if (asHttpError(e).statusCode === 404) return undefined;
      throw this.fail(e, `Inspect image ${ref}`);
    }
    const created = typeof image.Created === 'string' ? new Date(image.Created) : undefined;
    return {
      sizeBytes: typeof image.Size === 'number' && Number.isFinite(image.Size) ? image.Size : 0,
      ...(created && !Number.isNaN(created.getTime()) ? { createdAt: created } : {}),
    };
  }

  async pullImage(ref: string, onProgress?: (p: PullProgress) => void, signal?: AbortSignal, options: PullOptions = {}): Promise<void> {
    let stream: NodeJS.ReadableStream;
    try {
      stream = (await this.docker.pull(ref, signal ? { abortSignal: signal } : {})) as NodeJS.ReadableStream;
    } catch (e) {
      throw this.pullFailure(ref, e);
    }
    // A pre-pull must not keep the process alive: its response's socket is let go.
    if (options.background) (stream as { socket?: { unref?: () => void } }).socket?.unref?.();
    const failed = await readPullProgress(ref, stream, onProgress).catch((e: unknown) => {
      throw this.pullFailure(ref, e);
    });
    if (failed !== undefined) throw this.pullFailure(ref, new Error(failed));
  }

  /**
   * A pull that failed, in the engine's own words: IMAGE_NOT_FOUND when the registry says
   * there is no such image or tag, IMAGE_PULL_FAILED when the registry could not be asked
   * or refused (no network, a name that does not resolve, unauthorized, TLS).
   */
  private pullFailure(ref: string, e: unknown): SandboxError {
    if (e instanceof SandboxError) return e;
    const err = asHttpError(e);
    if ((err.code && UNREACHABLE.has(err.code)) || err.code === 'ABORT_ERR' || (e as Error)?.name === 'AbortError') {
      // The engine itself is unreachable, or the pull was aborted: not a registry failure.
      return this.fail(e, `Pull ${ref}`);
    }
    const said = engineMessage(err);
    if (err.statusCode === 404 || /manifest unknown|not found|does not exist|no such image/i.test(said)) {
      return new SandboxError(
        'IMAGE_NOT_FOUND',
        `Image ${ref} was not found: ${said}. Check the name and tag${ref.startsWith('genaicode-docker/') ? ', or build it (genaicode-docker images build, or docker/build-offline.sh)' : ''}.`,
        { cause: e, data: { image: ref } },
      );
    }
    return new SandboxError(
      'IMAGE_PULL_FAILED',
      `Pull of ${ref} failed: ${said}. Check the engine's network and registry access (docker pull ${ref} shows the same), or load the image another way.`,
      {
        cause: e,
        data: { image: ref, ...(err.statusCode ? { status: err.statusCode } : {}) },
      },
    );
  }

  async createContainer(spec: ContainerSpec): Promise<string> {
    const tmpfs: Record<string, string> = {};
    for (const t of spec.tmpfs) tmpfs[t.path] = `rw,nosuid,nodev,size=${t.sizeBytes}`;
    try {
      const container = await this.docker.createContainer({
        Image: spec.image,
        name: spec.name,
        Entrypoint: spec.entrypoint,
        Cmd: spec.cmd,
        Env: spec.env,
        Labels: spec.labels,
        WorkingDir: spec.workdir,
        User: spec.user,
        Tty: false,
        OpenStdin: false,
        AttachStdin: false,
        AttachStdout: false,
        AttachStderr: false,
        NetworkDisabled: spec.network === 'none',
        HostConfig: {
          // Invariants: set here, on every container, whatever the spec says.
          Privileged: false,
          Init: true,
          SecurityOpt: ['no-new-privileges'],
          CapDrop: ['ALL'],
          CapAdd: [...spec.capAdd],
          IpcMode: 'private',
          Devices: [],
          // Hardened, configurable values.
          NetworkMode: spec.network,
          Memory: spec.memoryBytes,
          MemorySwap: spec.memoryBytes,
          NanoCpus: spec.nanoCpus,
          PidsLimit: spec.pidsLimit,
          ReadonlyRootfs: spec.readOnlyRoot,
          ...(spec.diskBytes ? { StorageOpt: { size: String(spec.diskBytes) } } : {}),
          ...(spec.fileSizeLimitBytes
            ? { Ulimits: [{ Name: 'fsize', Soft: spec.fileSizeLimitBytes, Hard: spec.fileSizeLimitBytes }] }
            : {}),
          Tmpfs: tmpfs,
          Mounts: [
            ...spec.binds.map((b) => ({ Type: 'bind' as const, Source: b.hostPath, Target: b.containerPath, ReadOnly: b.readOnly })),
            // Anonymous volumes of the local driver mounted as tmpfs: removed with the container
            // (auto-remove and `v: true`), labelled for the sweep should the engine lose one.
            ...(spec.tmpfsVolumes ?? []).map((t) => ({
              Type: 'volume' as const,
              Source: '', // anonymous
              Target: t.path,
              VolumeOptions: {
                NoCopy: true, // empty, as a tmpfs mount is: the image's files there stay hidden
                Labels: spec.labels,
                DriverConfig: { Name: 'local', Options: { type: 'tmpfs', device: 'tmpfs', o: `nosuid,nodev,size=${t.sizeBytes}` } },
              },
            })),
            // The same for an overlay: the local driver mounts it at the start (the project
            // below, read-only; redirects, metacopy and the index off, so that every change
            // is a whole entry in the upper folder; attributes in the user namespace, so
            // that a non-root owner of the upper folder can read them).
            ...(spec.overlayVolumes ?? []).map((o) => ({
              Type: 'volume' as const,
              Source: '',
              Target: o.containerPath,
              VolumeOptions: {
                NoCopy: true,
                Labels: spec.labels,
                DriverConfig: {
                  Name: 'local',
                  Options: {
                    type: 'overlay',
                    device: 'overlay',
                    o: `lowerdir=${o.lowerDir},upperdir=${o.upperDir},workdir=${o.workDir},userxattr,redirect_dir=nofollow,metacopy=off,index=off`,
                  },
                },
              },
            })),
          ],
          AutoRemove: spec.autoRemove,
        },
      });
      return container.id;
    } catch (e) {
      const err = asHttpError(e);
      if (err.statusCode === 404) {
        throw new SandboxError('IMAGE_NOT_FOUND', `Image ${spec.image} is not present on the engine.`, { data: { image: spec.image } });
      }
      if (spec.diskBytes && /storage-opt is supported only/i.test(engineMessage(err))) {
        throw new SandboxError(
          'ENGINE_ERROR',
          `Create container from ${spec.image}: the storage driver has no disk quotas (${engineMessage(err)}).`,
          {
            cause: e,
            data: { status: err.statusCode, noDiskQuota: true },
          },
        );
      }
      if (err.statusCode === 409) {
        throw new SandboxError('INVALID_ARGUMENT', `A container named ${JSON.stringify(spec.name)} already exists: choose another name.`, {
          data: { name: spec.name },
        });
      }
      if (/init binary not found/i.test(engineMessage(err))) {
        // Podman installed without its recommended packages has no init for `Init: true`.
        throw new SandboxError(
          'ENGINE_ERROR',
          `Create container from ${spec.image}: the engine has no init binary to run as the container's process 1 (${engineMessage(err)}). ` +
            'On Podman, install catatonit (`apt-get install catatonit`) or set `init_path` under [containers] in containers.conf.',
          { cause: e, data: { status: err.statusCode } },
        );
      }
      throw this.fail(e, `Create container from ${spec.image}`);
    }
  }

  async startContainer(id: string): Promise<void> {
    try {
      await this.docker.getContainer(id).start();
    } catch (e) {
      if (asHttpError(e).statusCode === 304) return;
      throw new SandboxError('CONTAINER_START_FAILED', `Container ${id.slice(0, 12)} did not start: ${engineMessage(asHttpError(e))}`, {
        cause: e,
      });
    }
  }

  async stopContainer(id: string, graceSeconds: number): Promise<boolean> {
    try {
      await this.docker.getContainer(id).stop({ t: graceSeconds });
      return true;
    } catch (e) {
      const err = asHttpError(e);
      if (err.statusCode === 304) return true; // not running
      if (containerGone(err)) return false;
      throw this.fail(e, `Stop container ${id.slice(0, 12)}`);
    }
  }

  async removeContainer(id: string, force: boolean): Promise<boolean> {
    try {
      await this.docker.getContainer(id).remove({ force, v: true });
      return true;
    } catch (e) {
      const err = asHttpError(e);
      if (containerGone(err)) return false;
      // 409 "removal already in progress": auto-remove got there first. Wait for it to end,
      // so that once this resolves the container is not listed any more.
      if (err.statusCode === 409 && /in progress/i.test(engineMessage(err))) {
        await this.waitRemoved(id, REMOVAL_WAIT_MS);
        return true;
      }
      throw this.fail(e, `Remove container ${id.slice(0, 12)}`);
    }
  }

  /** Polls until the container is gone, at most `timeoutMs` (a stuck removal is the engine's to finish). */
  private async waitRemoved(id: string, timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      try {
        await this.docker.getContainer(id).inspect();
      } catch (e) {
        if (containerGone(asHttpError(e))) return;
        throw this.fail(e, `Inspect container ${id.slice(0, 12)}`);
      }
      await new Promise((r) => setTimeout(r, 25));
    }
  }

  async diskUsage(id: string): Promise<number | undefined> {
    try {
      // `size=true` (the engine adds SizeRw): dockerode passes options as the query; its types omit it.
      const info = (await this.docker.getContainer(id).inspect({ size: true } as Docker.ContainerInspectOptions)) as { SizeRw?: number };
      return typeof info.SizeRw === 'number' ? info.SizeRw : 0;
    } catch (e) {
      if (containerGone(asHttpError(e))) return undefined;
      throw this.fail(e, `Inspect container ${id.slice(0, 12)}`);
    }
  }

  async inspectContainer(idOrName: string): Promise<ContainerState | undefined> {
    try {
      const info = await this.docker.getContainer(idOrName).inspect();
      return {
        id: info.Id,
        name: info.Name.replace(/^\//, ''),
        running: info.State.Running,
        status: info.State.Status,
        oomKilled: info.State.OOMKilled,
        exitCode: info.State.Running ? null : info.State.ExitCode,
        labels: info.Config.Labels ?? {},
        ...(info.Config.WorkingDir ? { workdir: info.Config.WorkingDir } : {}),
      };
    } catch (e) {
      if (containerGone(asHttpError(e))) return undefined;
      throw this.fail(e, `Inspect container ${idOrName}`);
    }
  }

  async listContainers(labels: Record<string, string>): Promise<ContainerSummary[]> {
    try {
      const list = await this.docker.listContainers({
        all: true,
        filters: { label: Object.entries(labels).map(([k, v]) => `${k}=${v}`) },
      });
      return list.map((c) => ({
        id: c.Id,
        names: (c.Names ?? []).map((n) => n.replace(/^\//, '')),
        image: c.Image,
        labels: c.Labels ?? {},
        state: c.State,
        createdAt: new Date(c.Created * 1000),
      }));
    } catch (e) {
      throw this.fail(e, 'List containers');
    }
  }

  async exec(containerId: string, spec: ExecSpec, onOutput: (stream: StreamId, chunk: Buffer) => void): Promise<ExecSession> {
    const gone = (err: EngineHttpError) =>
      containerGone(err)
        ? goneError(containerId, err)
        : err.statusCode === 409
          ? containerGoneError({ id: containerId }, `the engine says: ${engineMessage(err)}`)
          : undefined;
    let exec: Docker.Exec;
    try {
      exec = await this.docker.getContainer(containerId).exec({
        Cmd: spec.cmd,
        Env: spec.env,
        WorkingDir: spec.workdir,
        User: spec.user,
        AttachStdin: spec.stdin !== undefined,
        AttachStdout: true,
        AttachStderr: true,
        Tty: false,
      });
    } catch (e) {
      throw gone(asHttpError(e)) ?? (await this.goneOr(containerId, e, () => this.fail(e, 'Start command')));
    }
    // Output is read over a connection of our own into one reused buffer (exec-stream.ts):
    // the demuxer hands views of it to onOutput, which must copy what it keeps.
    const demux = new FrameDemuxer(onOutput);
    let stream: ExecStream;
    try {
      stream = await openExecStream(this.transport, exec.id, (buf, start, end) => demux.push(buf.subarray(start, end)), {
        ...(spec.stdin ? { stdin: spec.stdin } : {}),
        ...(spec.background ? { background: true } : {}),
      });
    } catch (e) {
      if (e instanceof ExecStartError) {
        const err = { statusCode: e.statusCode, message: e.message };
        throw gone(err) ?? (await this.goneOr(containerId, err, () => this.fail(err, 'Start command')));
      }
      throw this.fail(e, 'Start command');
    }
    const done = stream.ended.then(
      () => this.execExitCode(exec),
      (e: unknown) => {
        throw this.fail(e, 'Read command output');
      },
    );
    return { done, detach: () => stream.destroy() };
  }

  /** The exit code, once the engine has recorded it (it can lag the end of the stream by a moment). */
  private async execExitCode(exec: Docker.Exec): Promise<{ exitCode: number | null }> {
    for (let attempt = 0; ; attempt++) {
      let info: Docker.ExecInspectInfo;
      try {
        info = await exec.inspect();
      } catch (e) {
        if (containerGone(asHttpError(e))) return { exitCode: null }; // container went away
        throw this.fail(e, 'Read exit code');
      }
      if (!info.Running && info.ExitCode !== null && info.ExitCode !== undefined) return { exitCode: info.ExitCode };
      if (attempt >= 50) return { exitCode: null };
      await new Promise((r) => setTimeout(r, Math.min(2 + attempt * 2, 20)));
    }
  }

  async statPath(id: string, path: string): Promise<PathStat | undefined> {
    let header: string | string[] | undefined;
    try {
      // The answer is a stream (dockerode dials HEAD as one): read to its end, or its
      // connection stays taken, open and keeping this process alive.
      const res = (await this.docker.getContainer(id).infoArchive({ path })) as {
        headers?: Record<string, string | string[] | undefined>;
        resume?: () => void;
      };
      res.resume?.();
      header = res.headers?.['x-docker-container-path-stat'];
    } catch (e) {
      // A HEAD answer has no body: 404 is the path or the container, which only asking tells.
      if (asHttpError(e).statusCode === 404 && (await this.inspectContainer(id))) return undefined;
      throw await this.goneOr(id, e, () => this.fail(e, `Look up ${path} in container ${id.slice(0, 12)}`));
    }
    const stat = parsePathStat(typeof header === 'string' ? header : undefined);
    if (!stat)
      throw new SandboxError('ENGINE_ERROR', `Look up ${path} in container ${id.slice(0, 12)}: the engine's answer had no readable stat.`);
    return stat;
  }

  async extractArchive(id: string, path: string, archive: Buffer | AsyncIterable<Buffer>): Promise<void> {
    try {
      // dockerode sends the options as the query, in the engine's own names. Owners are the
      // archive's own (copyUIDGID fails for a user missing from the image's passwd).
      await this.docker.getContainer(id).putArchive(Buffer.isBuffer(archive) ? archive : Readable.from(archive), {
        path,
        noOverwriteDirNonDir: true,
      });
    } catch (e) {
      const err = asHttpError(e);
      throw await this.goneOr(id, e, () =>
        err.statusCode === undefined || err.code
          ? this.fail(e, `Write into ${path}`)
          : new SandboxError('FILE_OPERATION_FAILED', `The engine refused to write into ${path}: ${engineMessage(err)}`, {
              cause: e,
              data: { path, reason: 'cannot write', status: err.statusCode },
            }),
      );
    }
  }

  /**
   * The error for a call the engine answered with an error: CONTAINER_NOT_FOUND when the
   * container stopped or went under it ("removal in progress", "container is not running",
   * "no such container"), which its own state says, not the message; `otherwise()` when not,
   * or when the engine could not be asked.
   */
  private async goneOr(id: string, e: unknown, otherwise: () => SandboxError): Promise<SandboxError> {
    const err = asHttpError(e);
    if (err.statusCode === undefined || err.code) return otherwise();
    const state = await this.inspectContainer(id).catch(() => null);
    return isGone(state) ? goneError(id, e) : otherwise();
  }

  removeContainersSync(ids: string[], timeoutMs: number): string[] {
    return removeContainersSync(this.connection, ids, timeoutMs);
  }
}
