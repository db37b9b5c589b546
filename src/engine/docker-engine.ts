import type { Agent } from 'node:http';
import Docker from 'dockerode';
import { swallowed } from '../debug.js';
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
import * as archive from './docker-archive.js';
import * as containers from './docker-containers.js';
import { dockerOptions, execTransport, type DockerContext } from './docker-context.js';
import * as execs from './docker-exec.js';
import * as images from './docker-images.js';
import './no-redirects.js';
import { asHttpError, engineMessage, UNREACHABLE } from './engine-errors.js';
import { serviceLimits } from './podman-limits.js';
import { removeContainersSync } from './remove-sync.js';
import { listPodmanOverlays, removePodmanVolumes, type VolumeSummary } from './podman-overlays.js';
import { hostOf, type EngineHost } from './rootless.js';
import { sshTunnel, type SshTunnel } from './ssh-tunnel.js';

export { parsePathStat } from './docker-archive.js';

/** The storage driver and its backing filesystem, from the engine's info. */
function storageOf(info: Record<string, unknown>): { storage?: { driver: string; backingFilesystem?: string } } {
  if (typeof info.Driver !== 'string') return {};
  const status = Array.isArray(info.DriverStatus) ? (info.DriverStatus as unknown[]) : [];
  const backing = status.find((row): row is [string, string] => Array.isArray(row) && row[0] === 'Backing Filesystem')?.[1];
  return { storage: { driver: info.Driver, ...(typeof backing === 'string' ? { backingFilesystem: backing } : {}) } };
}

/** Which engine a version answer names: Podman says so among its components. */
function kindOf(version: { Components?: Array<{ Name?: string }> }): EngineInfo['kind'] {
  const components = version.Components ?? [];
  return components.some((c) => /podman/i.test(c.Name ?? '')) ? 'podman' : components.length > 0 ? 'docker' : 'unknown';
}

/**
 * The dockerode adapter: the only place that knows the Docker API's shapes and status codes.
 * Each port method is one line here; the work is in docker-containers.ts, docker-exec.ts,
 * docker-archive.ts and docker-images.ts, on the shared DockerContext.
 */
export class DockerEngine implements ContainerEngine {
  readonly connection: EngineConnection;
  /** An ssh:// engine's forward (ssh-tunnel.ts), shared with every engine object of the same address. */
  readonly sshTunnel: SshTunnel | undefined;
  /** Where requests go: the engine's own address, or the local end of its ssh forward. */
  private readonly reach: EngineConnection;
  private readonly docker: Docker;
  /** What the parts share; the client and the transport stay out of the public surface. */
  private readonly ctx: DockerContext;
  private kindAnswer: Promise<EngineInfo['kind']> | undefined;
  private hostAnswer: Promise<EngineHost> | undefined;
  private limitsText: { text: string | undefined } | undefined;

  constructor(settings: ConnectionSettings = {}, env: NodeJS.ProcessEnv = process.env) {
    this.connection = resolveConnection(settings, env);
    this.sshTunnel = this.connection.kind === 'ssh' ? sshTunnel(this.connection) : undefined;
    this.reach = this.sshTunnel
      ? { kind: 'socket', socketPath: this.sshTunnel.socketPath, endpoint: this.connection.endpoint }
      : this.connection;
    // dockerode's connections wait for the forward through its agent; the exec streams and the
    // exit-time remover follow a dockerode call, so the forward is up by then.
    const options: Docker.DockerOptions & { agent?: Agent } = {
      ...dockerOptions(this.reach),
      ...(this.sshTunnel ? { agent: this.sshTunnel.agent } : {}),
    };
    this.docker = new Docker(options);
    this.ctx = {
      docker: this.docker,
      connection: this.connection,
      transport: execTransport(this.reach, options),
      fail: (e, context) => this.fail(e, context),
      kind: () => this.kind(),
      host: () => this.host(),
      serviceLimits: () => this.serviceLimits(),
      // Like the address, read from the environment where the settings do not say.
      rootlessWithoutLimits: settings.rootlessWithoutLimits ?? /^(1|true|yes)$/i.test(env.GENAICODE_DOCKER_ROOTLESS_WITHOUT_LIMITS ?? ''),
      podmanVolumes: new Map(),
      execFileSizeCaps: new Map(),
    };
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

  /** Which engine answers, asked once (again after a failure). */
  private kind(): Promise<EngineInfo['kind']> {
    this.kindAnswer ??= this.docker.version().then(kindOf, (e: unknown) => {
      this.kindAnswer = undefined; // asked again next time
      swallowed('asking the engine which it is', e);
      return 'unknown' as const;
    });
    return this.kindAnswer;
  }

  /** Whether the engine runs rootless and on which cgroups, asked once; a failure is the caller's and asked again next time. */
  private host(): Promise<EngineHost> {
    this.hostAnswer ??= (this.docker.info() as Promise<Record<string, unknown>>).then(hostOf, (e: unknown) => {
      this.hostAnswer = undefined;
      throw this.fail(e, 'Engine info');
    });
    return this.hostAnswer;
  }

  private serviceLimits(): string | undefined {
    this.limitsText ??= { text: serviceLimits(this.connection) };
    return this.limitsText.text;
  }

  async info(): Promise<EngineInfo> {
    try {
      const [version, info] = await Promise.all([this.docker.version(), this.docker.info() as Promise<Record<string, unknown>>]);
      const host = hostOf(info);
      return {
        version: version.Version,
        apiVersion: version.ApiVersion,
        os: `${version.Os}/${version.Arch}`,
        kind: kindOf(version as { Components?: Array<{ Name?: string }> }),
        cgroupVersion: host.cgroupVersion,
        rootless: host.rootless,
        endpoint: this.connection.endpoint,
        ...storageOf(info),
      };
    } catch (e) {
      throw this.fail(e, 'Engine info');
    }
  }

  hasImage(ref: string): Promise<boolean> {
    return images.hasImage(this.ctx, ref);
  }
  inspectImage(ref: string): Promise<ImageInfo | undefined> {
    return images.inspectImage(this.ctx, ref);
  }
  pullImage(ref: string, onProgress?: (p: PullProgress) => void, signal?: AbortSignal, options: PullOptions = {}): Promise<void> {
    return images.pullImage(this.ctx, ref, onProgress, signal, options);
  }
  createContainer(spec: ContainerSpec): Promise<string> {
    return containers.createContainer(this.ctx, spec);
  }
  startContainer(id: string): Promise<void> {
    return containers.startContainer(this.ctx, id);
  }
  stopContainer(id: string, graceSeconds: number): Promise<boolean> {
    return containers.stopContainer(this.ctx, id, graceSeconds);
  }
  removeContainer(id: string, force: boolean): Promise<boolean> {
    return containers.removeContainer(this.ctx, id, force);
  }
  diskUsage(id: string): Promise<number | undefined> {
    return containers.diskUsage(this.ctx, id);
  }
  inspectContainer(idOrName: string): Promise<ContainerState | undefined> {
    return containers.inspectContainer(this.ctx, idOrName);
  }
  listContainers(labels: Record<string, string>): Promise<ContainerSummary[]> {
    return containers.listContainers(this.ctx, labels);
  }
  exec(containerId: string, spec: ExecSpec, onOutput: (stream: StreamId, chunk: Buffer) => void): Promise<ExecSession> {
    return execs.exec(this.ctx, containerId, spec, onOutput);
  }
  statPath(id: string, path: string): Promise<PathStat | undefined> {
    return archive.statPath(this.ctx, id, path);
  }
  extractArchive(id: string, path: string, tar: Buffer | AsyncIterable<Buffer>): Promise<void> {
    return archive.extractArchive(this.ctx, id, path, tar);
  }
  removeContainersSync(ids: string[], timeoutMs: number): string[] {
    const volumes = ids.flatMap((id) => this.ctx.podmanVolumes.get(id) ?? []);
    return removeContainersSync(this.reach, ids, timeoutMs, volumes);
  }
  async listOverlayVolumes(labels: Record<string, string>): Promise<VolumeSummary[]> {
    // Docker's overlays are anonymous volumes, removed with their containers.
    return (await this.kind()) === 'podman' ? listPodmanOverlays(this.ctx, labels) : [];
  }
  async removeVolume(name: string): Promise<boolean> {
    return (await removePodmanVolumes(this.ctx, [name])).length === 1;
  }
}
