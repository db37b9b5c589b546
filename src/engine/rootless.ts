import type { EngineInfo } from './container-engine.js';

/** What an engine's info says about where it runs, asked once per engine (`DockerContext.host`). */
export interface EngineHost {
  /** The engine runs as a user without root (Podman's `Rootless`, rootless Docker's security option). */
  rootless: boolean;
  cgroupVersion: EngineInfo['cgroupVersion'];
}

/** The cgroup version an info answer names: Docker's `CgroupVersion`, or Podman's libpod shape. */
export function cgroupVersionOf(info: Record<string, unknown>): EngineInfo['cgroupVersion'] {
  const cg = String(info.CgroupVersion ?? (info.host as { cgroupVersion?: string } | undefined)?.cgroupVersion ?? '');
  return cg === '1' || cg === 'v1' ? '1' : cg === '2' || cg === 'v2' ? '2' : 'unknown';
}

export function hostOf(info: Record<string, unknown>): EngineHost {
  const options = Array.isArray(info.SecurityOptions) ? (info.SecurityOptions as unknown[]) : [];
  const rootless = info.Rootless === true || options.some((o) => typeof o === 'string' && /(^|,)name=rootless(,|$)/.test(o));
  return { rootless, cgroupVersion: cgroupVersionOf(info) };
}

/**
 * The user namespace a container gets: on rootless Podman `keep-id`, so that the user who runs
 * the engine is the same uid inside (a file the container writes into a host folder is that
 * user's, not a subordinate id's). Podman's compat API (1.40) takes it as `UsernsMode`.
 * Elsewhere the engine's default.
 */
export function usernsMode(kind: EngineInfo['kind'], host: EngineHost): string | undefined {
  return kind === 'podman' && host.rootless ? 'keep-id' : undefined;
}

/** Said after the limits where the user is asked to start a container and the operator accepted unenforced ones. */
export function unenforcedLimitsNote(settings: { rootlessWithoutLimits?: boolean } | undefined): string {
  return settings?.rootlessWithoutLimits ? ' (not enforced where the engine is rootless on cgroups v1: engine.rootlessWithoutLimits)' : '';
}

/**
 * The user a container runs as where the spec names none: the image's, as on every engine. On
 * rootless Podman `keep-id` would otherwise make it the engine's user (not root, and not the
 * image's user), so there the image's user is named, root where the image names none. A root
 * there is root of the container's user namespace only: a subordinate id on the host.
 */
export async function defaultUser(
  userns: string | undefined,
  user: string | undefined,
  imageUser: () => Promise<string | undefined>,
): Promise<string | undefined> {
  if (userns !== 'keep-id' || user !== undefined) return user;
  return (await imageUser()) || '0:0';
}

/**
 * Why a container cannot be started with its limits on this engine, where it cannot: a rootless
 * engine on cgroups v1 has no cgroup of its own to put them in, and both Podman and Docker then
 * create the container without its memory, CPU and process limits, without an error (Podman 4.3
 * does not even warn through its API). An operator may accept that for a machine of their own
 * (`engine.rootlessWithoutLimits`); nothing the model sends can.
 */
export function limitsRefusal(host: EngineHost, endpoint: string, withoutLimits = false): string | undefined {
  if (!host.rootless || host.cgroupVersion !== '1' || withoutLimits) return undefined;
  return (
    `The engine at ${endpoint} runs rootless on cgroups v1, where it cannot enforce a container's memory, CPU ` +
    'and process limits (it would silently start the container without them), so no sandbox is started there. ' +
    'Use a rootless engine on a machine with cgroups v2 (systemd.unified_cgroup_hierarchy=1), or a rootful engine; ' +
    'or, on a machine of your own, accept containers without limits with engine.rootlessWithoutLimits ' +
    '(GENAICODE_DOCKER_ROOTLESS_WITHOUT_LIMITS=1).'
  );
}

/**
 * An exec's command under the container's file size cap, where the engine did not give the
 * container that cap: Podman 4.3's compat API drops `HostConfig.Ulimits` when it runs rootless
 * (the container and its execs get no RLIMIT_FSIZE, checked on this project's CI machine), so
 * a model's one file could pass the disk limit by all it writes in the watch's second. The
 * exec's first process lowers its hard and soft limit before it runs anything and then becomes
 * the command (`exec`: the same pid, the process group the tree kill uses); nothing it starts
 * can raise it (no CAP_SYS_RESOURCE). `ulimit -f` counts 512-byte blocks in dash, busybox ash
 * and bash run as `sh`, so the cap is rounded down to one.
 */
export function underFileSizeCap(cmd: string[], capBytes: number | undefined): string[] {
  if (capBytes === undefined) return cmd; // every other engine: the command as it is, no copy
  const blocks = Math.max(1, Math.floor(capBytes / 512));
  return ['sh', '-c', `ulimit -f ${blocks} && exec "$@"`, 'sh', ...cmd];
}

/**
 * The capabilities a container is given back (`CapAdd`) for the user it runs as, where `applies`
 * (Podman: docker-containers.ts says which containers). Docker gives a container's user who is
 * not root none of them (its bounding set has them; with no-new-privileges nothing reaches them),
 * but Podman makes every added capability an ambient one for such a user (checked with Podman
 * 4.3, rootful and rootless): the user's own processes then have CHOWN, DAC_OVERRIDE, FOWNER,
 * SETUID... On rootless Podman that user is the engine's own (keep-id): it could give what it
 * writes in a project overlay's upper folder, a host folder of that user, to a subordinate id,
 * which the user cannot remove. So a user who is not root gets none, as on Docker. A user named
 * by a name is taken for not root unless it is `root`: the error that can make is a root without
 * its capabilities, never a user with them.
 */
export function capAddFor(applies: boolean, user: string | undefined, capAdd: readonly string[]): string[] {
  if (!applies) return [...capAdd];
  const name = (user ?? '').split(':')[0] ?? '';
  return name === '' || name === '0' || name === 'root' ? [...capAdd] : [];
}
