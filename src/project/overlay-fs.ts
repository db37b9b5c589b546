import { closeSync, constants, fstatSync, openSync, readSync, writeSync, type Stats } from 'node:fs';
import { join, posix } from 'node:path';
import { isWithin, realPathOf } from '../paths.js';

/**
 * Reading the upper folder of a project overlay, which the container may change at any
 * moment: every entry through the descriptor of its folder (`/proc/self/fd/<fd>/<name>`,
 * openat's semantics; the last name never followed), so a folder swapped for a link between
 * two looks leads nowhere new. And the rule for the links the container makes.
 */

export const O_PATH_FLAGS = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK;
export const O_DIR_FLAGS = O_PATH_FLAGS | constants.O_DIRECTORY;
const COPY_CHUNK = 1 << 20;

/** What an entry of either tree was, to tell a change from a second look at the same thing. */
export function identity(st: Stats): string {
  return `${st.mode}:${st.ino}:${st.size}:${st.mtimeMs}:${st.ctimeMs}`;
}

export const fdPath = (fd: number, name?: string): string => (name === undefined ? `/proc/self/fd/${fd}/.` : `/proc/self/fd/${fd}/${name}`);

export function isWhiteout(st: Stats): boolean {
  return st.isCharacterDevice() && st.rdev === 0;
}

/**
 * Why a link the container made may not be made in the project, or undefined when it stays
 * inside: never absolute (on the host that is the host's own path), never climbing after a
 * name (`a/../..`: `a` may itself be a link), never out of the project by its leading `..`,
 * and, where its target exists on the host now, really inside.
 */
export function linkProblem(projectRoot: string, rel: string, target: string): string | undefined {
  if (target === '' || target.includes('\0')) return 'an empty link';
  if (posix.isAbsolute(target)) return `an absolute link (${target}), which on the host leads out of the project`;
  const parts = target.split('/').filter((p) => p !== '' && p !== '.');
  const firstName = parts.findIndex((p) => p !== '..');
  if (firstName >= 0 && parts.slice(firstName).includes('..')) return `a link that climbs after a name (${target})`;
  const lexical = posix.normalize(posix.join(posix.dirname(rel), target));
  if (lexical === '..' || lexical.startsWith('../')) return `a link out of the project (${target})`;
  if (!isWithin(realPathOf(join(projectRoot, lexical)), realPathOf(projectRoot))) return `a link that leads out of the project (${target})`;
  return undefined;
}

/** Opens `rel` under `root` through its folders' descriptors (none followed); undefined when absent. */
export function openUnder(root: string, rel: string, flags: number): number | undefined {
  const parts = rel.split('/');
  let dir = openSync(root, O_DIR_FLAGS);
  try {
    for (const part of parts.slice(0, -1)) {
      const next = openSync(fdPath(dir, part), O_DIR_FLAGS);
      closeSync(dir);
      dir = next;
    }
    return openSync(fdPath(dir, parts[parts.length - 1] ?? ''), flags | constants.O_NOFOLLOW);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw e;
  } finally {
    closeSync(dir);
  }
}

export function copyFd(from: number, to: number): void {
  const buf = Buffer.allocUnsafe(COPY_CHUNK);
  let pos = 0;
  for (;;) {
    const n = readSync(from, buf, 0, COPY_CHUNK, pos);
    if (n === 0) return;
    let off = 0;
    while (off < n) off += writeSync(to, buf, off, n - off);
    pos += n;
  }
}

/**
 * The project's regular file at `rel` when it holds the same bytes and mode as the open upper
 * file `from` (whose stat is `upper`): a copy the container rewrote without changing it
 * (`sed -i` over every file) is then no change. Opened through the project's folders'
 * descriptors, none followed, so a link on the way (out of the project) is never read.
 */
export function sameInProject(from: number, upper: Stats, projectRoot: string, rel: string): Stats | undefined {
  let fd: number | undefined;
  try {
    fd = openUnder(projectRoot, rel, O_PATH_FLAGS);
  } catch {
    return undefined; // a link on the way, or not a folder: not the same file, whatever it leads to
  }
  if (fd === undefined) return undefined;
  try {
    const now = fstatSync(fd);
    if (!now.isFile() || now.size !== upper.size || (now.mode & 0o7777) !== (upper.mode & 0o7777)) return undefined;
    const a = Buffer.allocUnsafe(COPY_CHUNK);
    const b = Buffer.allocUnsafe(COPY_CHUNK);
    for (let pos = 0; ;) {
      const n = readSync(from, a, 0, COPY_CHUNK, pos);
      const m = readSync(fd, b, 0, COPY_CHUNK, pos);
      if (n !== m || !a.subarray(0, n).equals(b.subarray(0, m))) return undefined;
      if (n === 0) return pos === upper.size ? now : undefined;
      pos += n;
    }
  } finally {
    closeSync(fd);
  }
}
