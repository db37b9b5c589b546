import { randomBytes } from 'node:crypto';
import { statSync } from 'node:fs';
import type { OverlayVolume } from './container-engine.js';
import { SandboxError } from '../errors.js';
import { within } from '../retry.js';
import type { DockerContext } from './docker-context.js';
import { asHttpError } from './engine-errors.js';
import { swallowed } from '../debug.js';

/**
 * A project overlay (rw, scratch) on Podman. Docker's local volume driver mounts an anonymous
 * volume's overlay at the container's start and removes the volume with the container. Podman's
 * Docker API drops a volume's driver options (a plain folder: no overlay, no project), but its
 * own API (`/libpod/volumes/create`) keeps them and mounts the overlay at the start with exactly
 * our options (checked with Podman 4.3). Such a volume is named, so nothing removes it with its
 * container: we do, after each removal (`removeContainer`, the exit-time remover), and the sweep
 * removes those whose owner is gone, as it does containers. A volume in use is never removed
 * (no force): a live container keeps its overlay.
 *
 * At the first mount Podman gives the volume's root (for an overlay: the upper folder) the owner
 * and mode of the image's folder at that path, root's for `/workspace`; its API has no way to
 * say no (the `uid=`/`gid=` of its CLI reach the kernel there, which refuses them). Only root
 * can then remove what the container wrote, so project-mount.ts allows these overlays on rootful
 * Podman to a process running as root.
 *
 * Rootless Podman mounts the overlay in its own user namespace (the kernel allows that, with the
 * `userxattr` we always give), as the user who runs it, who must be the one running this process.
 * There the same first mount would give the upper folder to the image's root, a subordinate id:
 * the container's user could not write the project's root folder, nor the user remove it. But
 * where the mount point is not in the image, Podman gives the volume the container's user. So
 * each overlay is first mounted once at such a path by a container that never runs
 * (`primeRootlessOverlays`): the volume is then marked as owned and keeps the user's owner.
 */

/** The label that names the container a Podman overlay volume was made for. */
export const OVERLAY_OF_LABEL = 'genaicode-docker.overlay-of';

/**
 * The kernel options of a project overlay, on every engine: the project read-only below;
 * redirects, metacopy and the index off, so that every change is a whole entry in the upper
 * folder; attributes in the user namespace, so that a non-root owner of the upper folder can
 * read them.
 */
export function overlayMountOptions(o: OverlayVolume): string {
  return `lowerdir=${o.lowerDir},upperdir=${o.upperDir},workdir=${o.workDir},userxattr,redirect_dir=nofollow,metacopy=off,index=off`;
}

/** A managed volume as the sweep sees it. */
export interface VolumeSummary {
  name: string;
  labels: Record<string, string>;
}

/**
 * Creates one named overlay volume per overlay, for the container `containerName`, labelled
 * as the container is. On a failure the volumes made so far are removed again.
 * @returns the volumes' names, in the overlays' order
 */
export async function createPodmanOverlays(
  ctx: DockerContext,
  containerName: string,
  overlays: readonly OverlayVolume[],
  labels: Record<string, string>,
): Promise<string[]> {
  const names: string[] = [];
  try {
    for (const [i, o] of overlays.entries()) {
      const name = `${containerName}-overlay${i}`;
      await dial(ctx, 'POST', '/v4.0.0/libpod/volumes/create', {
        Name: name,
        Driver: 'local',
        Labels: { ...labels, [OVERLAY_OF_LABEL]: containerName },
        Options: { type: 'overlay', device: 'overlay', o: overlayMountOptions(o) },
      });
      names.push(name);
    }
    return names;
  } catch (e) {
    await removePodmanVolumes(ctx, names);
    throw ctx.fail(e, `Create the project overlay volume for ${containerName}`);
  }
}

/** How long the priming container's initialisation may take (it mounts the overlays; a wedged runtime would hold the start for good). */
export const PRIME_INIT_MS = 60_000;

/**
 * Mounts each volume once in a container made from `body` (the real one's user, user namespace,
 * image and labels; no network, ports, environment or added capabilities), at a path of its own
 * no image has, then removes it: it is initialised, never started. Podman gives a volume its
 * owner at the first mount only, and at a path the image does not have that owner is the
 * container's user. Its labels are the real container's, so a sweep finds it should this process
 * die in between. Then each upper folder must be this process's user's, or the start is refused
 * (a container user who is not the engine's, or a Podman that gives owners otherwise).
 * @throws SandboxError where the container cannot be removed (its volumes are then in use) or an upper folder is another's
 */
export async function primeRootlessOverlays(
  ctx: DockerContext,
  body: Record<string, unknown>,
  names: readonly string[],
  upperDirs: readonly string[],
): Promise<void> {
  const host = (body.HostConfig ?? {}) as Record<string, unknown>;
  const mount = `/.genaicode-docker-overlay-${randomBytes(6).toString('hex')}`;
  const primer = {
    Image: body.Image,
    name: `${names[0] ?? `genaicode-docker-${randomBytes(6).toString('hex')}`}-prime`,
    User: body.User,
    Labels: body.Labels,
    Entrypoint: ['true'],
    Cmd: [],
    NetworkDisabled: true,
    HostConfig: {
      NetworkMode: 'none',
      Privileged: false,
      SecurityOpt: ['no-new-privileges'],
      CapDrop: ['ALL'],
      AutoRemove: false,
      ...(host.UsernsMode ? { UsernsMode: host.UsernsMode } : {}),
      Mounts: names.map((name, i) => ({ Type: 'volume', Source: name, Target: `${mount}/${i}`, VolumeOptions: { NoCopy: true } })),
    },
  };
  // A failed create (no such image) is the caller's to word, as the real container's would be.
  const { id } = await ctx.docker.createContainer(primer as never);
  let failure: SandboxError | undefined;
  try {
    const done = await within(dial(ctx, 'POST', `/v4.0.0/libpod/containers/${id}/init`, {}), PRIME_INIT_MS);
    if (!done) throw new Error(`no answer in ${PRIME_INIT_MS / 1000} s`);
  } catch (e) {
    failure = ctx.fail(e, 'Prepare the project overlay on rootless Podman');
  }
  try {
    await ctx.docker.getContainer(id).remove({ force: true });
  } catch (e) {
    // Still there, it holds the volumes: nothing could remove them after the real container.
    if (asHttpError(e).statusCode !== 404)
      failure ??= ctx.fail(e, `Remove the container ${id.slice(0, 12)} that prepared the project overlay`);
  }
  if (failure) throw failure;
  const me = process.getuid?.();
  for (const dir of upperDirs) {
    const owner = statSync(dir).uid;
    if (owner !== me)
      throw new SandboxError(
        'POLICY_VIOLATION',
        `The project overlay's upper folder ${dir} belongs to uid ${owner} after Podman's first mount, not to this process's uid ${me ?? 'unknown'}: ` +
          "what the container wrote could not be applied or removed. On rootless Podman a 'rw' or 'scratch' project runs as the engine's own user: " +
          "leave 'user' unset (or set it to this uid), or mount the project read-only ('ro').",
        { data: { rule: 'projectMount' } },
      );
  }
}

/** Removes volumes (never forced: one still in use stays). Best effort: a failure is logged for debugging only. */
export async function removePodmanVolumes(ctx: DockerContext, names: readonly string[]): Promise<string[]> {
  const removed: string[] = [];
  for (const name of names) {
    try {
      await ctx.docker.getVolume(name).remove();
      removed.push(name);
    } catch (e) {
      if (asHttpError(e).statusCode === 404) continue;
      swallowed(`removing the overlay volume ${name}`, e);
    }
  }
  return removed;
}

/** The managed overlay volumes on the engine. */
export async function listPodmanOverlays(ctx: DockerContext, labels: Record<string, string>): Promise<VolumeSummary[]> {
  try {
    const answer = await ctx.docker.listVolumes({
      filters: JSON.stringify({ label: [...Object.entries(labels).map(([k, v]) => `${k}=${v}`), OVERLAY_OF_LABEL] }),
    } as unknown as Parameters<typeof ctx.docker.listVolumes>[0]);
    return (answer.Volumes ?? [])
      .filter((v) => v.Labels?.[OVERLAY_OF_LABEL] !== undefined)
      .map((v) => ({ name: v.Name, labels: v.Labels ?? {} }));
  } catch (e) {
    throw ctx.fail(e, 'List volumes');
  }
}

/** The named volumes a container mounts, from its inspect (Podman names an overlay volume there). */
export function volumeNames(inspect: { Mounts?: Array<{ Type?: string; Name?: string }> }): string[] {
  return (inspect.Mounts ?? []).filter((m) => m.Type === 'volume' && m.Name).map((m) => m.Name!);
}

/** A request dockerode has no method for (Podman's own API, which answers only under a version), with its JSON body. */
function dial(ctx: DockerContext, method: string, path: string, body: Record<string, unknown>): Promise<unknown> {
  return new Promise((resolve, reject) => {
    ctx.docker.modem.dial(
      {
        path,
        method,
        options: body,
        statusCodes: {
          200: true,
          201: true,
          204: true,
          304: true,
          400: 'bad request',
          404: 'no such container',
          409: 'conflict',
          500: 'server error',
        },
      },
      (err: unknown, data: unknown) => (err ? reject(err) : resolve(data)),
    );
  });
}
