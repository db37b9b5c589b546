import { closeSync, mkdirSync, openSync, readdirSync, rmSync, statSync, writeSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';

export interface LogRetention {
  maxTotalBytes: number;
  maxAgeDays: number;
}

/**
 * Full command logs on disk: one folder per session, one file per command holding every
 * byte the command printed (stdout and stderr as they arrived), and a `.json` beside it
 * with the command, exit code and counts. Older sessions are pruned by age and total size.
 */
export class LogStore {
  readonly sessionDir: string;
  private seq = 0;
  private pruned = false;

  constructor(
    readonly rootDir: string,
    readonly sessionId: string,
    private readonly retention?: LogRetention,
  ) {
    this.sessionDir = join(rootDir, sessionId);
  }

  /** A new, unique log path for one command. */
  nextPath(label: string): string {
    // Every time: the folder may have been removed by hand since the last command.
    mkdirSync(this.sessionDir, { recursive: true });
    if (!this.pruned) {
      this.pruned = true;
      if (this.retention) pruneLogs(this.rootDir, this.sessionId, this.retention);
    }
    this.seq += 1;
    const slug = label.replace(/[^a-zA-Z0-9._-]+/g, '-').replace(/^-+|-+$/g, '').slice(0, 40) || 'cmd';
    return join(this.sessionDir, `${String(this.seq).padStart(4, '0')}-${slug}.log`);
  }

  open(path: string): LogSink {
    return new LogSink(path);
  }

  async writeMeta(logPath: string, meta: Record<string, unknown>): Promise<void> {
    await writeFile(logPath.replace(/\.log$/, '.json'), `${JSON.stringify(meta, null, 2)}\n`);
  }
}

function dirSize(dir: string): number {
  let total = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, entry.name);
    total += entry.isDirectory() ? dirSize(p) : statSync(p).size;
  }
  return total;
}

/** A session whose folder changed this recently may still be running: it is never pruned. */
export const ACTIVE_SESSION_MS = 3600 * 1000;

/**
 * Deletes other sessions' folders older than maxAgeDays, then oldest first beyond
 * maxTotalBytes. Folders written to in the last ACTIVE_SESSION_MS are never deleted: their
 * session may be live, and its answers point at those logs.
 */
export function pruneLogs(rootDir: string, keepSession: string, retention: LogRetention, now = Date.now()): string[] {
  const removed: string[] = [];
  let sessions: Array<{ path: string; mtime: number; size: number }>;
  try {
    sessions = readdirSync(rootDir, { withFileTypes: true })
      .filter((e) => e.isDirectory() && e.name !== keepSession)
      .map((e) => {
        const path = join(rootDir, e.name);
        return { path, mtime: statSync(path).mtimeMs, size: dirSize(path) };
      })
      .sort((a, b) => a.mtime - b.mtime);
  } catch {
    return removed;
  }
  const maxAgeMs = retention.maxAgeDays * 24 * 3600 * 1000;
  let total = sessions.reduce((s, x) => s + x.size, 0);
  for (const s of sessions) {
    if (now - s.mtime < ACTIVE_SESSION_MS) continue;
    if (now - s.mtime > maxAgeMs || total > retention.maxTotalBytes) {
      rmSync(s.path, { recursive: true, force: true });
      total -= s.size;
      removed.push(s.path);
    }
  }
  return removed;
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

  constructor(readonly path: string) {
    try {
      this.fd = openSync(path, 'w');
    } catch (e) {
      this.error = (e as Error).message;
    }
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
