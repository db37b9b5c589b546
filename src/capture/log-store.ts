import {
  closeSync,
  constants,
  lstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  realpathSync,
  rmdirSync,
  unlinkSync,
  writeSync,
  type Stats,
} from 'node:fs';
import { dirname, join } from 'node:path';
import { SandboxError } from '../errors.js';
import { swallowed } from '../debug.js';

interface LogRetention {
  maxTotalBytes: number;
  maxAgeDays: number;
}

/**
 * Every file of ours is created with these flags: a new file or nothing (O_EXCL), and
 * never through a symbolic link (O_NOFOLLOW; with O_EXCL a link at the path is refused
 * too). Whoever planted a file or a link under the next log's name gets an error, never
 * a write through it.
 */
const EXCLUSIVE_CREATE = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW;
/** Logs hold whatever commands printed, secrets included: for their owner only. */
const FILE_MODE = 0o600;
const DIR_MODE = 0o700;

/** A session folder's name: what `newSessionId` makes, or a library user's own id of the same alphabet. */
const SESSION_ID = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;
/** The file in every session folder we create; a folder without it is not ours and is never pruned. */
export const SESSION_MARKER = '.genaicode-docker-session';
/** The files we write in a session folder: `0001-label.log`, `0001-label.json`. */
const LOG_FILE = /^\d{4,}-[A-Za-z0-9._-]*\.(?:log|json)$/;
/** How many taken names `create` steps over before it gives up. */
const CREATE_ATTEMPTS = 20;

/** @throws SandboxError INVALID_ARGUMENT for an id that is not a plain folder name. */
function checkSessionId(sessionId: string): void {
  if (!SESSION_ID.test(sessionId) || sessionId === '.' || sessionId === '..' || /^\.+$/.test(sessionId)) {
    throw new SandboxError(
      'INVALID_ARGUMENT',
      `Session id ${JSON.stringify(sessionId)} is not valid: use 1-64 letters, digits, _ . - starting with a letter or digit.`,
    );
  }
}

const myUid = typeof process.getuid === 'function' ? process.getuid() : undefined;
const myGid = typeof process.getgid === 'function' ? process.getgid() : undefined;

/**
 * Full command logs on disk: one folder per session, one file per command holding every
 * byte the command printed (stdout and stderr as they arrived), and a `.json` beside it
 * with the command, exit code and counts. Older sessions are pruned by age and total size.
 *
 * The session folder is created by this store (never taken over if it already exists),
 * checked before every file to still be that same real folder owned by this user, and
 * every file in it is created exclusively and never through a link.
 */
export class LogStore {
  readonly sessionDir: string;
  private seq = 0;
  private pruned = false;
  /** The session folder as created: its device and inode, so a swapped folder is noticed. */
  private made: { dev: number; ino: number; path: string } | undefined;

  constructor(
    readonly rootDir: string,
    readonly sessionId: string,
    private readonly retention?: LogRetention,
  ) {
    checkSessionId(sessionId);
    this.sessionDir = join(rootDir, sessionId);
  }

  /**
   * Creates the next log file of this session and returns it open for writing. A log that
   * cannot be created (disk full, a folder that is not ours) does not throw: the sink
   * carries the error, drops writes, and the result says the log is incomplete.
   */
  create(label: string): LogSink {
    const slug =
      label
        .replace(/[^a-zA-Z0-9._-]+/g, '-')
        .replace(/^-+|-+$/g, '')
        .slice(0, 40) || 'cmd';
    let dir: string;
    try {
      dir = this.folder();
    } catch (e) {
      this.seq += 1;
      return LogSink.failed(join(this.sessionDir, `${String(this.seq).padStart(4, '0')}-${slug}.log`), (e as Error).message);
    }
    let lastError = '';
    for (let attempt = 0; attempt < CREATE_ATTEMPTS; attempt++) {
      this.seq += 1;
      const path = join(dir, `${String(this.seq).padStart(4, '0')}-${slug}.log`);
      try {
        return new LogSink(path, openSync(path, EXCLUSIVE_CREATE, FILE_MODE));
      } catch (e) {
        lastError = (e as Error).message;
        // A name already taken (by whom is not ours to guess) is stepped over; anything else is final.
        if ((e as NodeJS.ErrnoException).code !== 'EEXIST' && (e as NodeJS.ErrnoException).code !== 'ELOOP')
          return LogSink.failed(path, lastError);
      }
    }
    return LogSink.failed(join(dir, `${String(this.seq).padStart(4, '0')}-${slug}.log`), lastError);
  }

  /** Writes the `.json` beside a log, created the same way (a new file, never through a link). */
  async writeMeta(logPath: string, meta: Record<string, unknown>): Promise<void> {
    const path = logPath.replace(/\.log$/, '.json');
    const sink = new LogSink(path, openSync(path, EXCLUSIVE_CREATE, FILE_MODE));
    sink.write(Buffer.from(`${JSON.stringify(meta, null, 2)}\n`));
    sink.end();
    if (sink.error) throw new Error(sink.error);
  }

  /**
   * The session folder, made on first use (and again if it was removed by hand since), and
   * checked every time: a real folder (not a link), owned by this user, the very one made.
   * @throws Error saying what is wrong, when it is not ours.
   */
  private folder(): string {
    if (!this.made) {
      mkdirSync(this.rootDir, { recursive: true, mode: DIR_MODE });
      checkNoOtherWriter(realpathSync(this.rootDir));
      if (!this.pruned && this.retention) pruneLogs(this.rootDir, this.sessionId, this.retention);
      this.pruned = true;
    }
    // The real path, taken once: later files go where the first one went.
    const path = this.made?.path ?? join(realpathSync(this.rootDir), this.sessionId);
    let st: Stats | undefined;
    try {
      st = lstatSync(path);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
    }
    if (!st) {
      mkdirSync(dirname(path), { recursive: true, mode: DIR_MODE });
      // Not recursive: a folder of that name made by someone else is an error, not ours to take.
      mkdirSync(path, { mode: DIR_MODE });
      closeSync(openSync(join(path, SESSION_MARKER), EXCLUSIVE_CREATE, FILE_MODE));
      st = lstatSync(path);
      this.made = { dev: st.dev, ino: st.ino, path };
    }
    if (!st.isDirectory()) throw new Error(`the session log folder ${path} is not a folder (a link or a file is there)`);
    if (myUid !== undefined && st.uid !== myUid)
      throw new Error(`the session log folder ${path} belongs to uid ${st.uid}, not to this user`);
    if (!this.made || st.dev !== this.made.dev || st.ino !== this.made.ino)
      throw new Error(`the session log folder ${path} was not created by this session`);
    return path;
  }
}

/**
 * Nobody but this user (or root) may change the log folder or any folder above it: whoever
 * could would be able to swap a folder for a link between our check and our write, or
 * between the prune's check and its delete. Like ssh's StrictModes: each folder must belong
 * to this user or root and be writable by neither group nor others, unless it is sticky
 * (as /tmp is: others cannot rename or remove what is ours in it).
 * @throws Error naming the folder that others can write.
 */
function checkNoOtherWriter(realDir: string): void {
  if (myUid === undefined) return;
  for (let dir = realDir; ; dir = dirname(dir)) {
    const st = lstatSync(dir);
    const sticky = (st.mode & 0o1000) !== 0;
    // A user's own folder writable by their own primary group (the "user private group" of many distributions) is theirs.
    const ownGroup = st.uid === myUid && st.gid === myGid;
    const othersWrite = (st.mode & 0o002) !== 0 || ((st.mode & 0o020) !== 0 && !ownGroup);
    if ((st.uid !== myUid && st.uid !== 0) || (othersWrite && !sticky)) {
      throw new Error(
        `the log folder ${realDir} is not safe: ${dir} can be changed by another user (owner uid ${st.uid}, mode ${(st.mode & 0o7777).toString(8)}); choose a logs.dir that only you can write`,
      );
    }
    if (dirname(dir) === dir) return;
  }
}

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
    } catch {
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
  } catch {
    return false; // something appeared meanwhile: left as it is
  }
}

/**
 * The full log of one command. Writes go straight to the file (the page cache) from the
 * output callback, synchronously: measured on 1 GiB, a WriteStream's queue and thread-pool
 * round trips cost this process about 0.6 s more CPU per GiB, which on two cores slows the
 * stream itself; and while a write runs no more output is read, which is the backpressure.
 * A failure is kept in `error` and later writes are dropped: the command is not stopped.
 */
export class LogSink {
  private fd: number | undefined;
  error: string | undefined;

  /** `fd` is open for writing on `path` (see LogStore.create). */
  constructor(
    readonly path: string,
    fd: number,
  ) {
    this.fd = fd;
  }

  /** A log that could not be created: writes are dropped, `error` says why. */
  static failed(path: string, error: string): LogSink {
    const sink = new LogSink(path, -1);
    sink.fd = undefined;
    sink.error = error;
    return sink;
  }

  write(chunk: Buffer): void {
    if (this.fd === undefined || this.error) return;
    try {
      let off = 0;
      while (off < chunk.length) off += writeSync(this.fd, chunk, off, chunk.length - off);
    } catch (e) {
      this.error = (e as Error).message;
    }
  }

  /** Closes the file; safe to call twice. */
  end(): void {
    if (this.fd === undefined) return;
    const fd = this.fd;
    this.fd = undefined;
    try {
      closeSync(fd);
    } catch (e) {
      this.error ??= (e as Error).message;
    }
  }
}
