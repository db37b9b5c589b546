import { lstatSync, readdirSync, rmdirSync, unlinkSync, type Stats } from 'node:fs';
import { join } from 'node:path';
import { swallowed } from '../debug.js';

/**
 * What a session folder of ours looks like, and the pruning of old ones: only folders this
 * package made (a session id for a name, our marker inside, nothing but our log files) are
 * ever deleted, file by file, never through a link.
 */

export interface LogRetention {
  maxTotalBytes: number;
  maxAgeDays: number;
}

/** A session folder's name: what `newSessionId` makes, or a library user's own id of the same alphabet. */
export const SESSION_ID = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;
/** The file in every session folder we create; a folder without it is not ours and is never pruned. */
export const SESSION_MARKER = '.genaicode-docker-session';
/** The files we write in a session folder: `0001-label.log`, `0001-label.json`. */
const LOG_FILE = /^\d{4,}-[A-Za-z0-9._-]*\.(?:log|json)$/;
export const myUid = typeof process.getuid === 'function' ? process.getuid() : undefined;

/** A session folder is ours when it has our marker and nothing but regular files of ours. */
function ownSessionFolder(path: string): { size: number } | undefined {
  let size = 0;
  let marked = false;
  let entries;
  try {
    entries = readdirSync(path, { withFileTypes: true });
  } catch (e) {
    swallowed(`reading ${path} for pruning`, e);
    return undefined;
  }
  for (const e of entries) {
    if (!e.isFile()) return undefined; // a folder, a link, a socket: not something we wrote
    if (e.name === SESSION_MARKER) marked = true;
    else if (!LOG_FILE.test(e.name)) return undefined;
    try {
      size += lstatSync(join(path, e.name)).size;
    } catch (statError) {
      swallowed(`size of ${join(path, e.name)}`, statError);
      return undefined;
    }
  }
  return marked ? { size } : undefined;
}

/** A session whose folder changed this recently may still be running: it is never pruned. */
const ACTIVE_SESSION_MS = 3600 * 1000;

/**
 * Deletes other sessions' folders older than maxAgeDays, then oldest first beyond
 * maxTotalBytes. Only folders this package created are touched: a session id for a name,
 * owned by this user, holding our marker and nothing but our log files; they are emptied
 * file by file and removed, and no link is ever followed. Folders written to in the last
 * ACTIVE_SESSION_MS are never deleted: their session may be live, and its answers point
 * at those logs.
 */
export function pruneLogs(rootDir: string, keepSession: string, retention: LogRetention, now = Date.now()): string[] {
  const removed: string[] = [];
  const sessions: Array<{ path: string; mtime: number; size: number }> = [];
  let names: string[];
  try {
    names = readdirSync(rootDir);
  } catch (e) {
    swallowed(`reading ${rootDir} for pruning`, e);
    return removed;
  }
  for (const name of names) {
    if (name === keepSession || !SESSION_ID.test(name)) continue;
    const path = join(rootDir, name);
    let st: Stats;
    try {
      st = lstatSync(path);
    } catch (e) {
      swallowed(`looking at ${path} for pruning`, e);
      continue;
    }
    if (!st.isDirectory() || (myUid !== undefined && st.uid !== myUid)) continue;
    const own = ownSessionFolder(path);
    if (own) sessions.push({ path, mtime: st.mtimeMs, size: own.size });
  }
  sessions.sort((a, b) => a.mtime - b.mtime);
  const maxAgeMs = retention.maxAgeDays * 24 * 3600 * 1000;
  let total = sessions.reduce((s, x) => s + x.size, 0);
  for (const s of sessions) {
    if (now - s.mtime < ACTIVE_SESSION_MS) continue;
    if (now - s.mtime > maxAgeMs || total > retention.maxTotalBytes) {
      if (removeSessionFolder(s.path)) {
        total -= s.size;
        removed.push(s.path);
      }
    }
  }
  return removed;
}

/** Empties one of our session folders file by file (checked again just before), then removes it. */
function removeSessionFolder(path: string): boolean {
  if (!ownSessionFolder(path)) return false;
  try {
    for (const name of readdirSync(path)) unlinkSync(join(path, name));
    rmdirSync(path);
    return true;
  } catch (e) {
    swallowed(`pruning ${path}: something appeared meanwhile, left as it is`, e);
    return false;
  }
}
