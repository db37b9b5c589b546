import { randomBytes } from 'node:crypto';
import type Docker from 'dockerode';
import { SandboxError } from '../errors.js';
import { poll } from '../retry.js';
import type { ContainerSpec, ContainerState, ContainerSummary, EngineInfo } from './container-engine.js';
import type { DockerContext } from './docker-context.js';
import { asHttpError, containerGone, engineMessage } from './engine-errors.js';
import { hardLimit } from './podman-limits.js';
import { capAddFor, defaultUser, limitsRefusal, usernsMode } from './rootless.js';
import { imageUser } from './docker-images.js';
import { createPodmanOverlays, overlayMountOptions, primeRootlessOverlays, removePodmanVolumes, volumeNames } from './podman-overlays.js';

/** How long removeContainer waits for a removal already in progress (auto-remove) to end. */
const REMOVAL_WAIT_MS = 10_000;

type Ulimit = { Name: string; Soft: number; Hard: number };

/**
 * The ulimits a container gets: the file size cap. On Podman also nofile and nproc at the
 * service's hard limits (`limits`, a /proc/PID/limits text; podman-limits.ts says why).
 */
export function containerUlimits(spec: Pick<ContainerSpec, 'fileSizeLimitBytes'>, kind: string, limits?: string): Ulimit[] | undefined {
  if (!spec.fileSizeLimitBytes) return undefined;
  const list: Ulimit[] = [{ Name: 'fsize', Soft: spec.fileSizeLimitBytes, Hard: spec.fileSizeLimitBytes }];
  if (kind === 'podman' && limits !== undefined) {
    const nofile = hardLimit(limits, 'Max open files');
    const nproc = hardLimit(limits, 'Max processes');
    if (nofile !== undefined) list.push({ Name: 'nofile', Soft: nofile, Hard: nofile });
    if (nproc !== undefined) list.push({ Name: 'nproc', Soft: nproc, Hard: nproc });
  }
  return list;
}

/**
 * Podman's compat API ignores a volume's driver options (the volume is a plain folder on its
 * disk, no size cap), but its archive PUT reaches a tmpfs mount of a running container, which
 * Docker's does not: so on Podman the capped folder is a tmpfs mount (nosuid and nodev by
 * default there), world-writable with the sticky bit as a fresh tmpfs is.
 */
function podmanTmpfs(t: { path: string; sizeBytes: number }) {
  return { Type: 'tmpfs' as const, Source: '', Target: t.path, TmpfsOptions: { SizeBytes: t.sizeBytes, Mode: 0o1777 } };
}

/** The engine's create body: the invariants set here, on every container, whatever the spec says. */
export function createBody(
  spec: ContainerSpec,
  kind: EngineInfo['kind'],
  limits: Ulimit[] | undefined,
  userns?: string,
  /** On Podman: the named volumes made for `spec.overlayVolumes` (podman-overlays.ts), in their order. */
  overlayNames?: readonly string[],
): Docker.ContainerCreateOptions {
  const tmpfs: Record<string, string> = {};
  for (const t of spec.tmpfs) tmpfs[t.path] = `rw,nosuid,nodev,size=${t.sizeBytes}`;
  return {
    Image: spec.image,
    name: spec.name,
    Entrypoint: spec.entrypoint,
    Cmd: spec.cmd,
    Env: spec.env,
    Labels: spec.labels,
    WorkingDir: spec.workdir,
    User: spec.user,
    Tty: false,
    ...(spec.publishPorts?.length ? { ExposedPorts: Object.fromEntries(spec.publishPorts.map((port) => [`${port}/tcp`, {}])) } : {}),
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
      // Published on the host's loopback only, whatever asked: never another interface.
      ...(spec.publishPorts?.length
        ? { PortBindings: Object.fromEntries(spec.publishPorts.map((port) => [`${port}/tcp`, [{ HostIp: '127.0.0.1', HostPort: '' }]])) }
        : {}),
      ...(userns ? { UsernsMode: userns } : {}),
      Devices: [],
      // Hardened, configurable values.
      NetworkMode: spec.network,
      Memory: spec.memoryBytes,
      MemorySwap: spec.memoryBytes,
      NanoCpus: spec.nanoCpus,
      PidsLimit: spec.pidsLimit,
      ReadonlyRootfs: spec.readOnlyRoot,
      ...(spec.diskBytes ? { StorageOpt: { size: String(spec.diskBytes) } } : {}),
      ...(limits ? { Ulimits: limits } : {}),
      Tmpfs: tmpfs,
      Mounts: [
        ...spec.binds.map((b) => ({ Type: 'bind' as const, Source: b.hostPath, Target: b.containerPath, ReadOnly: b.readOnly })),
        // Anonymous volumes of the local driver mounted as tmpfs: removed with the container
        // (auto-remove and `v: true`), labelled for the sweep should the engine lose one.
        ...(spec.tmpfsVolumes ?? []).map((t) =>
          kind === 'podman'
            ? podmanTmpfs(t)
            : {
                Type: 'volume' as const,
                Source: '', // anonymous
                Target: t.path,
                VolumeOptions: {
                  NoCopy: true, // empty, as a tmpfs mount is: the image's files there stay hidden
                  Labels: spec.labels,
                  DriverConfig: { Name: 'local', Options: { type: 'tmpfs', device: 'tmpfs', o: `nosuid,nodev,size=${t.sizeBytes}` } },
                },
              },
        ),
        // The same for an overlay: the local driver mounts it at the start (overlayMountOptions).
        // On Podman the volume is a named one of its own API, made before the container.
        ...(spec.overlayVolumes ?? []).map((o, i) =>
          overlayNames
            ? // NoCopy: the image's files at that path are never copied into it (they would reach the project).
              {
                Type: 'volume' as const,
                Source: overlayNames[i]!,
                Target: o.containerPath,
                VolumeOptions: {
                  NoCopy: true,
                  Labels: spec.labels,
                  DriverConfig: { Name: 'local', Options: {} as Record<string, string> },
                },
              }
            : {
                Type: 'volume' as const,
                Source: '',
                Target: o.containerPath,
                VolumeOptions: {
                  NoCopy: true,
                  Labels: spec.labels,
                  DriverConfig: { Name: 'local', Options: { type: 'overlay', device: 'overlay', o: overlayMountOptions(o) } },
                },
              },
        ),
      ],
      AutoRemove: spec.autoRemove,
    },
  };
}

export async function createContainer(ctx: DockerContext, spec: ContainerSpec): Promise<string> {
  const [kind, host] = await Promise.all([ctx.kind(), ctx.host()]);
  const refusal = limitsRefusal(host, ctx.connection.endpoint, ctx.rootlessWithoutLimits);
  if (refusal) throw new SandboxError('POLICY_VIOLATION', refusal, { data: { rule: 'resourceLimits' } });
  const limits = containerUlimits(spec, kind, kind === 'podman' ? ctx.serviceLimits() : undefined);
  const overlays = spec.overlayVolumes ?? [];
  // Before any volume is made: a failure here leaves nothing behind.
  const userns = usernsMode(kind, host);
  const user = await defaultUser(userns, spec.user, () => imageUser(ctx, spec.image));
  // Podman makes every added capability ambient for a user who is not root (capAddFor). On
  // rootful Podman a project overlay's user writes the upper folder, root's, through them: that
  // container keeps them. The image's user where none is named (keep-id has named it already).
  const podmanNonRootRule = kind === 'podman' && (host.rootless || overlays.length === 0);
  const runsAs = podmanNonRootRule && user === undefined ? (await imageUser(ctx, spec.image)) || '0' : user;
  const capAdd = capAddFor(podmanNonRootRule, runsAs, spec.capAdd);
  const overlayNames =
    kind === 'podman' && overlays.length > 0
      ? await createPodmanOverlays(ctx, spec.name ?? `genaicode-docker-${randomBytes(6).toString('hex')}`, overlays, spec.labels)
      : undefined;
  const body = createBody({ ...spec, user, capAdd }, kind, limits, userns, overlayNames);
  try {
    if (overlayNames?.length && host.rootless)
      await primeRootlessOverlays(
        ctx,
        body as Record<string, unknown>,
        overlayNames,
        overlays.map((o) => o.upperDir),
      );
    const { id } = await ctx.docker.createContainer(body);
    // Every container of ours on Podman, overlays or none: its removal then needs no inspect to find them.
    if (kind === 'podman') ctx.podmanVolumes.set(id, overlayNames ?? []);
    // Rootless Podman drops the ulimits of the body: each exec sets the file size cap itself.
    if (kind === 'podman' && host.rootless && spec.fileSizeLimitBytes) ctx.execFileSizeCaps.set(id, spec.fileSizeLimitBytes);
    return id;
  } catch (e) {
    if (overlayNames) await removePodmanVolumes(ctx, overlayNames);
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
    throw ctx.fail(e, `Create container from ${spec.image}`);
  }
}

export async function startContainer(ctx: DockerContext, id: string): Promise<void> {
  try {
    await ctx.docker.getContainer(id).start();
  } catch (e) {
    if (asHttpError(e).statusCode === 304) return;
    throw new SandboxError('CONTAINER_START_FAILED', `Container ${id.slice(0, 12)} did not start: ${engineMessage(asHttpError(e))}`, {
      cause: e,
    });
  }
}

export async function stopContainer(ctx: DockerContext, id: string, graceSeconds: number): Promise<boolean> {
  try {
    await ctx.docker.getContainer(id).stop({ t: graceSeconds });
    return true;
  } catch (e) {
    const err = asHttpError(e);
    if (err.statusCode === 304) return true; // not running
    if (containerGone(err)) return false;
    throw ctx.fail(e, `Stop container ${id.slice(0, 12)}`);
  }
}

export async function removeContainer(ctx: DockerContext, id: string, force: boolean): Promise<boolean> {
  // On Podman a project overlay is a named volume: it goes after its container (podman-overlays.ts).
  const volumes = (await ctx.kind()) === 'podman' ? await podmanVolumesOf(ctx, id) : [];
  try {
    return await removeOnly(ctx, id, force);
  } finally {
    if (volumes.length > 0) await removePodmanVolumes(ctx, volumes);
    ctx.podmanVolumes.delete(id);
    ctx.execFileSizeCaps.delete(id);
  }
}

/** The named volumes of a container on Podman: the ones we made for it, or (another process's) from its inspect. */
async function podmanVolumesOf(ctx: DockerContext, id: string): Promise<string[]> {
  const ours = ctx.podmanVolumes.get(id);
  if (ours) return ours;
  try {
    return volumeNames(await ctx.docker.getContainer(id).inspect());
  } catch {
    return []; // gone already: its volumes are the sweep's (owner gone or expired)
  }
}

async function removeOnly(ctx: DockerContext, id: string, force: boolean): Promise<boolean> {
  try {
    await ctx.docker.getContainer(id).remove({ force, v: true });
    return true;
  } catch (e) {
    const err = asHttpError(e);
    if (containerGone(err)) return false;
    // 409 "removal already in progress": auto-remove got there first. Wait for it to end,
    // so that once this resolves the container is not listed any more.
    if (err.statusCode === 409 && /in progress/i.test(engineMessage(err))) {
      await waitRemoved(ctx, id, REMOVAL_WAIT_MS);
      return true;
    }
    throw ctx.fail(e, `Remove container ${id.slice(0, 12)}`);
  }
}

/**
 * Polls until the container is gone, at most `timeoutMs` (a stuck removal is the engine's to
 * finish). A removal that failed half-way leaves the container `dead` (an engine killed while
 * removing it, a busy mount), and nothing removes it again by itself: that one is removed here.
 */
async function waitRemoved(ctx: DockerContext, id: string, timeoutMs: number): Promise<void> {
  await poll(
    async () => {
      let dead: boolean;
      try {
        dead = (await ctx.docker.getContainer(id).inspect()).State?.Status === 'dead';
      } catch (e) {
        if (containerGone(asHttpError(e))) return true;
        throw ctx.fail(e, `Inspect container ${id.slice(0, 12)}`);
      }
      if (!dead) return undefined;
      try {
        await ctx.docker.getContainer(id).remove({ force: true, v: true });
        return true;
      } catch (e) {
        if (containerGone(asHttpError(e))) return true;
        throw ctx.fail(e, `Remove dead container ${id.slice(0, 12)}`);
      }
    },
    { timeoutMs, intervalMs: 25 },
  );
}

export async function diskUsage(ctx: DockerContext, id: string): Promise<number | undefined> {
  try {
    // `size=true` (the engine adds SizeRw): dockerode passes options as the query; its types omit it.
    const info = (await ctx.docker.getContainer(id).inspect({ size: true } as Docker.ContainerInspectOptions)) as { SizeRw?: number };
    return typeof info.SizeRw === 'number' ? info.SizeRw : 0;
  } catch (e) {
    if (containerGone(asHttpError(e))) return undefined;
    throw ctx.fail(e, `Inspect container ${id.slice(0, 12)}`);
  }
}

export async function inspectContainer(ctx: DockerContext, idOrName: string): Promise<ContainerState | undefined> {
  try {
    const info = await ctx.docker.getContainer(idOrName).inspect();
    return {
      id: info.Id,
      name: info.Name.replace(/^\//, ''),
      running: info.State.Running,
      status: info.State.Status,
      oomKilled: info.State.OOMKilled,
      exitCode: info.State.Running ? null : info.State.ExitCode,
      labels: info.Config.Labels ?? {},
      ...(info.Config.WorkingDir ? { workdir: info.Config.WorkingDir } : {}),
      ...publishedPorts(info.NetworkSettings?.Ports),
    };
  } catch (e) {
    if (containerGone(asHttpError(e))) return undefined;
    throw ctx.fail(e, `Inspect container ${idOrName}`);
  }
}

/**
 * The host addresses of a container's published tcp ports, as inspect lists them: a port
 * bound on 127.0.0.1 only. A port the engine also (or instead) bound on another address (an
 * engine that ignored HostIp, or a wildcard `0.0.0.0`, `::`, empty) is left out, so that the
 * start, which finds it missing, refuses the container rather than answer a loopback address
 * for a port reachable from elsewhere.
 */
export function publishedPorts(ports: Record<string, Array<{ HostIp: string; HostPort: string }> | null> | undefined): {
  ports?: Record<string, string>;
} {
  const found: Record<string, string> = {};
  for (const [key, bindings] of Object.entries(ports ?? {})) {
    const m = /^(\d+)\/tcp$/.exec(key);
    if (!m || !bindings?.length || bindings.some((x) => x.HostIp !== '127.0.0.1')) continue;
    const b = bindings.find((x) => /^\d+$/.test(x.HostPort));
    if (b) found[m[1]!] = `127.0.0.1:${b.HostPort}`;
  }
  return Object.keys(found).length ? { ports: found } : {};
}

export async function listContainers(ctx: DockerContext, labels: Record<string, string>): Promise<ContainerSummary[]> {
  try {
    const list = await ctx.docker.listContainers({
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
    throw ctx.fail(e, 'List containers');
  }
}
