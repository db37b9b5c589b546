import { Readable } from 'node:stream';
import { SandboxError } from '../errors.js';
import type { PathStat } from './container-engine.js';
import { goneOr, runningState, type DockerContext } from './docker-context.js';
import { asHttpError, engineMessage } from './engine-errors.js';

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

/** What is at `path` in the container (the archive API's HEAD), or undefined when nothing is. */
export async function statPath(ctx: DockerContext, id: string, path: string): Promise<PathStat | undefined> {
  let header: string | string[] | undefined;
  try {
    // The answer is a stream (dockerode dials HEAD as one): read to its end, or its
    // connection stays taken, open and keeping this process alive.
    const res = (await ctx.docker.getContainer(id).infoArchive({ path })) as {
      headers?: Record<string, string | string[] | undefined>;
      resume?: () => void;
    };
    res.resume?.();
    header = res.headers?.['x-docker-container-path-stat'];
  } catch (e) {
    // A HEAD answer has no body: 404 is the path or the container, which only asking tells.
    if (asHttpError(e).statusCode === 404) {
      const running = await runningState(ctx, id);
      if (running !== undefined && running !== null) return undefined;
    }
    throw await goneOr(ctx, id, e, () => ctx.fail(e, `Look up ${path} in container ${id.slice(0, 12)}`));
  }
  const stat = parsePathStat(typeof header === 'string' ? header : undefined);
  if (!stat)
    throw new SandboxError('ENGINE_ERROR', `Look up ${path} in container ${id.slice(0, 12)}: the engine's answer had no readable stat.`);
  return stat;
}

/** Extracts a tar into `path` of the container (the archive API's PUT). */
export async function extractArchive(ctx: DockerContext, id: string, path: string, archive: Buffer | AsyncIterable<Buffer>): Promise<void> {
  try {
    // dockerode sends the options as the query, in the engine's own names. Owners are the
    // archive's own (copyUIDGID fails for a user missing from the image's passwd).
    await ctx.docker.getContainer(id).putArchive(Buffer.isBuffer(archive) ? archive : Readable.from(archive), {
      path,
      noOverwriteDirNonDir: true,
    });
  } catch (e) {
    const err = asHttpError(e);
    throw await goneOr(ctx, id, e, () =>
      err.statusCode === undefined || err.code
        ? ctx.fail(e, `Write into ${path}`)
        : new SandboxError('FILE_OPERATION_FAILED', `The engine refused to write into ${path}: ${engineMessage(err)}`, {
            cause: e,
            data: { path, reason: 'cannot write', status: err.statusCode },
          }),
    );
  }
}
