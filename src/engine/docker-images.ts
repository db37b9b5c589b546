import { SandboxError } from '../errors.js';
import type { ImageInfo, PullOptions, PullProgress } from './container-engine.js';
import type { DockerContext } from './docker-context.js';
import { asHttpError, engineMessage, UNREACHABLE } from './engine-errors.js';
import { readPullProgress } from './pull-progress.js';

/** An image's inspect answer, undefined where the image is absent. */
async function inspectAnswer(
  ctx: DockerContext,
  ref: string,
): Promise<{ Size?: unknown; Created?: unknown; Config?: { User?: unknown } } | undefined> {
  try {
    return (await ctx.docker.getImage(ref).inspect()) as { Size?: unknown; Created?: unknown; Config?: { User?: unknown } };
  } catch (e) {
    if (asHttpError(e).statusCode === 404) return undefined;
    throw ctx.fail(e, `Inspect image ${ref}`);
  }
}

export async function hasImage(ctx: DockerContext, ref: string): Promise<boolean> {
  return (await inspectAnswer(ctx, ref)) !== undefined;
}

/** The user an image's config names ('' or undefined: root), undefined where the image is absent (the create then says so). */
export async function imageUser(ctx: DockerContext, ref: string): Promise<string | undefined> {
  const user = (await inspectAnswer(ctx, ref))?.Config?.User;
  return typeof user === 'string' ? user : undefined;
}

export async function inspectImage(ctx: DockerContext, ref: string): Promise<ImageInfo | undefined> {
  const image = await inspectAnswer(ctx, ref);
  if (!image) return undefined;
  const created = typeof image.Created === 'string' ? new Date(image.Created) : undefined;
  return {
    sizeBytes: typeof image.Size === 'number' && Number.isFinite(image.Size) ? image.Size : 0,
    ...(created && !Number.isNaN(created.getTime()) ? { createdAt: created } : {}),
  };
}

export async function pullImage(
  ctx: DockerContext,
  ref: string,
  onProgress?: (p: PullProgress) => void,
  signal?: AbortSignal,
  options: PullOptions = {},
): Promise<void> {
  let stream: NodeJS.ReadableStream;
  try {
    stream = (await ctx.docker.pull(ref, signal ? { abortSignal: signal } : {})) as NodeJS.ReadableStream;
  } catch (e) {
    throw pullFailure(ctx, ref, e);
  }
  // A pre-pull must not keep the process alive: its response's socket is let go.
  if (options.background) (stream as { socket?: { unref?: () => void } }).socket?.unref?.();
  const failed = await readPullProgress(ref, stream, onProgress).catch((e: unknown) => {
    throw pullFailure(ctx, ref, e);
  });
  if (failed !== undefined) throw pullFailure(ctx, ref, new Error(failed));
}

/**
 * A pull that failed, in the engine's own words: IMAGE_NOT_FOUND when the registry says
 * there is no such image or tag, IMAGE_PULL_FAILED when the registry could not be asked
 * or refused (no network, a name that does not resolve, unauthorized, TLS).
 */
function pullFailure(ctx: DockerContext, ref: string, e: unknown): SandboxError {
  if (e instanceof SandboxError) return e;
  const err = asHttpError(e);
  if ((err.code && UNREACHABLE.has(err.code)) || err.code === 'ABORT_ERR' || (e as Error)?.name === 'AbortError') {
    // The engine itself is unreachable, or the pull was aborted: not a registry failure.
    return ctx.fail(e, `Pull ${ref}`);
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
