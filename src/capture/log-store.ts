import { closeSync, constants, lstatSync, mkdirSync, openSync, realpathSync, type Stats } from 'node:fs';
import { dirname, join } from 'node:path';
import { SandboxError } from '../errors.js';
import { LogSink } from './log-sink.js';
import { myUid, pruneLogs, SESSION_ID, SESSION_MARKER, type LogRetention } from './session-folders.js';

export { LogSink } from './log-sink.js';

/**
 * Retention of older sessions, and the caps of this one: a command's log, this session's
 * logs together, and the free space under which logs stop growing. A cap left out is none.
 */
export interface LogLimits extends LogRetention {
  maxCommandBytes?: number;
  maxSessionBytes?: number;
  minFreeBytes?: number;
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

/** How many taken names `create` steps over before it gives up. */
const CREATE_ATTEMPTS = 20;

/** @throws SandboxError INVALID_ARGUMENT for an id that is not a plain folder name. */
function checkSessionId(sessionId: string): void {
  // A letter or digit first: never `.` or `..`, never a path.
  if (!SESSION_ID.test(sessionId)) {
    throw new SandboxError(
      'INVALID_ARGUMENT',
      `Session id ${JSON.stringify(sessionId)} is not valid: use 1-64 letters, digits, _ . - starting with a letter or digit.`,
    );
  }
}

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
  /** Bytes this session's closed logs take, and the budgets of those still open (each taken whole when it opens). */
  private sessionBytes = 0;
  private reservedBytes = 0;

  constructor(
    readonly rootDir: string,
    readonly sessionId: string,
    private readonly retention?: LogLimits,
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
        return this.sink(path, openSync(path, EXCLUSIVE_CREATE, FILE_MODE));
      } catch (e) {
        lastError = (e as Error).message;
        // A name already taken (by whom is not ours to guess) is stepped over; anything else is final.
        if ((e as NodeJS.ErrnoException).code !== 'EEXIST' && (e as NodeJS.ErrnoException).code !== 'ELOOP')
          return LogSink.failed(path, lastError);
      }
    }
    return LogSink.failed(join(dir, `${String(this.seq).padStart(4, '0')}-${slug}.log`), lastError);
  }

  /**
   * The sink of a new log, with its budget: the command's cap, or what is left of the
   * session's when that is less. The budget is taken whole when the log opens and what the
   * file did not use is given back when it closes, so logs written side by side cannot pass
   * the session's cap together.
   */
  private sink(path: string, fd: number): LogSink {
    const r = this.retention;
    if (r?.maxCommandBytes === undefined && r?.maxSessionBytes === undefined && !r?.minFreeBytes) return new LogSink(path, fd);
    const perCommand = r.maxCommandBytes ?? Infinity;
    const left = Math.max(0, (r.maxSessionBytes ?? Infinity) - this.sessionBytes - this.reservedBytes);
    const budget = Math.min(perCommand, left);
    const reserved = Number.isFinite(budget) ? budget : 0;
    this.reservedBytes += reserved;
    return new LogSink(path, fd, {
      budget,
      cap:
        left < perCommand
          ? { name: 'logs.maxSessionBytes', bytes: r.maxSessionBytes ?? Infinity }
          : { name: 'logs.maxCommandBytes', bytes: perCommand },
      minFreeBytes: r.minFreeBytes ?? 0,
      // The ring is read back when the log closes.
      files: { create: (p) => openSync(p, (EXCLUSIVE_CREATE & ~constants.O_WRONLY) | constants.O_RDWR, FILE_MODE) },
      settle: (diskBytes) => {
        this.reservedBytes -= reserved;
        this.sessionBytes += diskBytes;
      },
    });
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
