import { statSync } from 'node:fs';
import type { BindMount, ContainerEngine } from '../engine/container-engine.js';
import { canReadOpaque } from './overlay-xattr.js';
import { SandboxError } from '../errors.js';
import { isWithin, PACKAGE_ROOT, realPathOf } from '../paths.js';
import { INVARIANTS, type ProjectMount } from '../policy/policy.js';
import { makeProjectOverlay, type ProjectOverlay } from './project-overlay.js';

/**
 * The GenAIcode project mounted at the working folder. Read-only: a read-only bind of the
 * project. Writable (`rw`) or `scratch`: an overlay whose lower layer is the project,
 * read-only, and whose upper layer is a folder of ours (project-overlay.ts). The container
 * never writes the host's tree: with `rw` this process applies what it wrote, checked
 * (overlay-apply.ts); with `scratch` nothing is applied and the layer is thrown away.
 */
export interface ProjectBinds {
  hostRoot: string;
  containerRoot: string;
  mount: Exclude<ProjectMount, 'none'>;
  binds: BindMount[];
  overlay?: ProjectOverlay;
}

/**
 * @param hostRoot the project root (real path)
 * @param stateDir a folder of ours that holds the overlays' folders
 * @throws SandboxError POLICY_VIOLATION when the plugin is the project itself (writable mount), or the overlay cannot hold the path
 */
export function projectBinds(
  hostRoot: string,
  containerRoot: string,
  mount: Exclude<ProjectMount, 'none'>,
  stateDir: string,
  container: { name: string; owner: string },
  pluginRoot: string = realPathOf(PACKAGE_ROOT),
): ProjectBinds {
  if (mount === 'ro')
    return { hostRoot, containerRoot, mount, binds: [{ hostPath: hostRoot, containerPath: containerRoot, readOnly: true }] };
  if (mount === 'rw' && isWithin(hostRoot, pluginRoot))
    throw new SandboxError(
      'POLICY_VIOLATION',
      `writable mount of ${hostRoot}, which is inside the plugin's own folder ${pluginRoot}: not allowed (${INVARIANTS.protectedProjectPaths}).`,
      { data: { rule: 'protectedProjectPaths' } },
    );
  const overlay = makeProjectOverlay(stateDir, hostRoot, containerRoot, { container: container.name, owner: container.owner, mode: mount });
  return { hostRoot, containerRoot, mount, binds: [], overlay };
}

/** An engine reached over the network: its bind mounts name its own machine's folders, not ours. */
export function isRemoteEngine(engine: ContainerEngine): boolean {
  return engine.connection !== undefined && engine.connection.kind !== 'socket';
}

/**
 * Host folders (the project, `mounts`) reach a container only through an engine on this
 * machine: a remote engine would mount the folders of the same name on ITS machine (or
 * fail), so they are refused before anything is made, with the reason.
 * @throws SandboxError POLICY_VIOLATION on a remote engine with a project mount or host mounts
 */
export function checkHostPathsLocal(engine: ContainerEngine, project: ProjectMount, mountCount: number): void {
  if (!isRemoteEngine(engine) || (project === 'none' && mountCount === 0)) return;
  const what =
    project !== 'none' ? `the project ('${project}' mount)` : `${mountCount} host folder${mountCount === 1 ? '' : 's'} ('mounts')`;
  throw new SandboxError(
    'POLICY_VIOLATION',
    `Cannot mount ${what}: the engine at ${engine.connection?.endpoint ?? 'its address'} is remote, and a path it mounts is a path on ITS machine, not this one. ` +
      "Use project 'none' and copy files in with the file actions (or `genaicode-docker cp`), or use an engine on this machine.",
    { data: { rule: 'localHostPaths' satisfies keyof typeof INVARIANTS } },
  );
}

/**
 * The uid a rootless engine on a local socket runs as: the socket's owner (the service makes
 * it). Undefined where that cannot be read.
 */
function socketOwner(engine: ContainerEngine): number | undefined {
  const conn = engine.connection;
  if (conn?.kind !== 'socket') return undefined;
  try {
    return statSync(conn.socketPath).uid;
  } catch {
    return undefined;
  }
}

/** The overlay a writable or scratch project needs: the local volume driver of Docker or Podman, on this machine. */
export async function checkOverlayEngine(engine: ContainerEngine, mount: 'rw' | 'scratch'): Promise<void> {
  const info = isRemoteEngine(engine) || !canReadOpaque() ? undefined : await engine.info();
  const me = process.getuid?.();
  const engineUser = info?.kind === 'podman' && info.rootless ? socketOwner(engine) : undefined;
  const why = isRemoteEngine(engine)
    ? "the engine is remote: its overlay would be of its own machine's folders"
    : !canReadOpaque()
      ? 'extended attributes cannot be read on this platform'
      : info?.kind === 'podman' && info.rootless
        ? // It mounts the overlay in its user namespace, as its user: the folders we make must be that user's.
          engineUser === undefined || engineUser !== me
          ? `the engine is a rootless Podman run by ${engineUser === undefined ? 'a user this process cannot tell (its socket cannot be read)' : `uid ${engineUser}`}, and this process runs as uid ${me ?? 'unknown'}: it mounts the overlay as its own user, who must be the one running this`
          : undefined
        : info?.kind === 'podman' && me !== 0
          ? // podman-overlays.ts: Podman makes the upper folder root's at the first mount.
            "the engine is Podman, which gives the overlay's upper folder to root, and this process does not run as root (it could not clean up what the container wrote)"
          : info?.kind !== 'docker' && info?.kind !== 'podman'
            ? 'the engine is neither Docker nor Podman (their local volume driver mounts the overlay)'
            : undefined;
  if (why)
    throw new SandboxError(
      'POLICY_VIOLATION',
      `A '${mount}' project mount needs an overlay of the project, and ${why}: mount it read-only ('ro') instead.`,
      { data: { rule: 'projectMount' } },
    );
}
