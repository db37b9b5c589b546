import { closeSync, constants, fstatSync, ftruncateSync, lstatSync, mkdirSync, openSync } from 'node:fs';
import { join } from 'node:path';
import { swallowed } from '../debug.js';
import { copyFd, identity, O_PATH_FLAGS, openUnder } from './overlay-fs.js';

/**
 * The way back from the project to an overlay's upper folder, the opposite direction of
 * overlay-apply.ts: a host edit of a file the container changed earlier written into the
 * upper copy that hides it, and the held files' container versions copied out for a
 * person to review. Both read the upper folder through descriptors (overlay-fs.ts).
 */

/** What the held files' copies (kept for review when a container ends) may take on the host's disk, per container. */
export const HELD_COPIES_BUDGET = 64 * 1024 ** 2;

/** Each applied path: the identity of the upper entry it was made from, and of the project's entry right after ('' for none). */
export type AppliedEntries = Map<string, { upper: string; project: string }>;

/**
 * Files applied earlier stay in the upper folder (it may not change under a mounted
 * overlay), where they hide the project's version from the container. A host edit made
 * since (the seed's "fix on the host, run the tests again") is written into that upper
 * copy, in place, so the container sees it; a file the host deleted is returned, for the
 * container to delete. `applied` is brought up to date. Returns the paths written.
 */
export function syncHostEdits(
  applied: AppliedEntries,
  projectRoot: string,
  upperRoot: string,
): { written: string[]; deletedOnHost: string[] } {
  const written: string[] = [];
  const deletedOnHost: string[] = [];
  for (const [rel, rec] of applied) {
    if (rec.project === '') continue;
    const now = lstatSync(join(projectRoot, rel), { throwIfNoEntry: false });
    if (now && identity(now) === rec.project) continue;
    if (!now) {
      deletedOnHost.push(rel);
      applied.delete(rel);
      continue;
    }
    if (!now.isFile()) continue;
    try {
      const upper = writeUpper(upperRoot, rel, join(projectRoot, rel));
      if (upper) {
        applied.set(rel, { upper, project: identity(now) });
        written.push(rel);
      }
    } catch (e) {
      swallowed(`bringing the host's edit of ${rel} into the container`, e);
    }
  }
  return { written, deletedOnHost };
}

/**
 * Copies the held files' container versions to `dest` (a new folder of ours, 0700; each
 * copy 0600, never executable), for the user to look at and apply by hand. Returns how many.
 */
export function saveHeldCopies(held: Iterable<string>, upperRoot: string, dest: string, budgetBytes = HELD_COPIES_BUDGET): number {
  let saved = 0;
  let left = budgetBytes;
  for (const rel of held) {
    try {
      const src = openUnder(upperRoot, rel, O_PATH_FLAGS);
      if (src === undefined) continue;
      try {
        const st = fstatSync(src);
        if (!st.isFile()) continue;
        // Copies are for a person to review, on the host's disk: within a budget (a sparse
        // file counts its full size, which the copy writes); past it the container's version is not kept.
        if (st.size > left) continue;
        left -= st.size;
        const path = join(dest, rel);
        mkdirSync(join(path, '..'), { recursive: true, mode: 0o700 });
        const out = openSync(path, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
        try {
          copyFd(src, out);
        } finally {
          closeSync(out);
        }
        saved++;
      } finally {
        closeSync(src);
      }
    } catch (e) {
      swallowed(`keeping the container's version of ${rel}`, e);
    }
  }
  return saved;
}

/** Writes the host file into the upper copy of `rel`, in place (never through a link, only a regular file). */
function writeUpper(upperRoot: string, rel: string, source: string): string | undefined {
  const fd = openUnder(upperRoot, rel, constants.O_WRONLY | constants.O_NONBLOCK);
  if (fd === undefined) return undefined;
  try {
    const st = fstatSync(fd);
    if (!st.isFile() || st.nlink !== 1) return undefined;
    const src = openSync(source, constants.O_RDONLY | constants.O_NOFOLLOW);
    try {
      ftruncateSync(fd, 0);
      copyFd(src, fd);
    } finally {
      closeSync(src);
    }
    return identity(fstatSync(fd));
  } finally {
    closeSync(fd);
  }
}
