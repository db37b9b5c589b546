import type { OverlayVolume } from './container-engine.js';
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
 * can then remove what the container wrote, so project-mount.ts allows these overlays on Podman
 * to a process running as root.
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
      { path, method, options: body, statusCodes: { 200: true, 201: true, 400: 'bad request', 409: 'conflict', 500: 'server error' } },
      (err: unknown, data: unknown) => (err ? reject(err) : resolve(data)),
    );
  });
}
