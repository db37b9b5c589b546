import { closeSync, readSync, statfsSync, unlinkSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';
import { swallowed } from '../debug.js';

/**
 * What one log may take from the disk, decided when it is created (LogStore.create): at
 * most `budget` bytes, the first half kept as they come (the head) and the last half in a
 * ring (the tail), so a command that prints for ever costs a bounded file; and never while
 * the disk's free space is under `minFreeBytes`.
 */
export interface LogBudget {
  /** Bytes of output the log keeps at most (head + tail). */
  budget: number;
  /** Which setting set `budget` (the command's cap, or what is left of the session's), and its value. */
  cap: { name: 'logs.maxCommandBytes' | 'logs.maxSessionBytes'; bytes: number };
  /** Free space below which the log stops growing (logs.minFreeBytes); 0: never. */
  minFreeBytes: number;
  /** Called once with the bytes the file took on disk, when it is closed (the session's count). */
  settle?: (diskBytes: number) => void;
}

/** The file options of every file of ours (see LogStore): a new file, never through a link, open for reading and writing. */
export interface SinkFiles {
  create(path: string): number;
}

/** Free space is looked at again after this many bytes written: a statfs per chunk would cost more than the write. */
const FREE_CHECK_BYTES = 8 * 1024 ** 2;
/** The tail is moved after the head in chunks of this size when the log closes. */
const COPY_CHUNK = 1024 ** 2;

const mib = (n: number) => `${(n / 1024 ** 2).toFixed(n < 10 * 1024 ** 2 ? 1 : 0)} MiB`;

/** Free bytes for an unprivileged writer on the file system of `dir`; undefined when it cannot be read. */
export function freeBytes(dir: string): number | undefined {
  try {
    const s = statfsSync(dir);
    return s.bavail * s.bsize;
  } catch (e) {
    swallowed(`free space of ${dir}`, e);
    return undefined;
  }
}

/**
 * The full log of one command. Writes go straight to the file (the page cache) from the
 * output callback, synchronously: measured on 1 GiB, a WriteStream's queue and thread-pool
 * round trips cost this process about 0.6 s more CPU per GiB, which on two cores slows the
 * stream itself; and while a write runs no more output is read, which is the backpressure.
 * A failure is kept in `error` and later writes are dropped: the command is not stopped.
 *
 * Past its budget's head the bytes go to a ring file beside it (`<log>.tail.log`, written
 * in place, so it never grows past the tail's size); when the log closes, a line saying
 * what was dropped is written after the head and the ring is copied after it in order.
 * Every byte is still counted (`totalBytes`).
 */
export class LogSink {
  private fd: number | undefined;
  error: string | undefined;
  /** Every byte given to `write`, kept or not. */
  totalBytes = 0;
  private headBytes = 0;
  private ringFd: number | undefined;
  private ringPos = 0;
  private ringLen = 0;
  private ringFailed = false;
  private sinceFreeCheck = 0;
  /** The free space under the floor, when it stopped the log: bytes then free. */
  private stoppedAtFree: number | undefined;
  private endedBytes = 0;
  private readonly headMax: number;
  private readonly tailMax: number;

  /** `fd` is open for writing on `path` (see LogStore.create). */
  constructor(
    readonly path: string,
    fd: number,
    private readonly limits?: LogBudget & { files: SinkFiles },
  ) {
    this.fd = fd;
    const budget = limits ? Math.max(0, Math.floor(limits.budget)) : Infinity;
    this.headMax = Math.ceil(budget / 2);
    this.tailMax = Number.isFinite(budget) ? budget - this.headMax : 0;
    if (limits?.minFreeBytes) this.checkFree();
  }

  /** A log that could not be created: writes are dropped, `error` says why. */
  static failed(path: string, error: string): LogSink {
    const sink = new LogSink(path, -1);
    sink.fd = undefined;
    sink.error = error;
    return sink;
  }

  write(chunk: Buffer): void {
    this.totalBytes += chunk.length;
    if (this.fd === undefined || this.error || this.stoppedAtFree !== undefined) return;
    if (this.limits?.minFreeBytes) {
      this.sinceFreeCheck += chunk.length;
      if (this.sinceFreeCheck >= FREE_CHECK_BYTES && this.checkFree()) return;
    }
    try {
      let rest = chunk;
      if (this.headBytes < this.headMax) {
        const take = Math.min(rest.length, this.headMax - this.headBytes);
        writeAll(this.fd, rest, take);
        this.headBytes += take;
        rest = rest.subarray(take);
      }
      if (rest.length > 0) this.writeTail(rest);
    } catch (e) {
      this.error = (e as Error).message;
    }
  }

  /** Bytes of output that are not in the log (dropped from its middle, or after the disk got too full). */
  get droppedBytes(): number {
    return Math.max(0, this.totalBytes - this.headBytes - (this.stoppedAtFree === undefined ? this.ringLen : 0));
  }

  /**
   * What the answer says about a log that does not hold every byte, in one sentence;
   * undefined when it holds them all.
   */
  get cutNote(): string | undefined {
    const dropped = this.droppedBytes;
    if (dropped === 0 || !this.limits) return undefined;
    if (this.stoppedAtFree !== undefined)
      return (
        `the full log stopped at ${mib(this.headBytes)} of ${mib(this.totalBytes)}: the disk has ${mib(this.stoppedAtFree)} free, ` +
        `under logs.minFreeBytes (${mib(this.limits.minFreeBytes)}); ${dropped} bytes of output are not in it`
      );
    const { name, bytes } = this.limits.cap;
    if (this.limits.budget === 0)
      return `this session's logs reached ${name} (${mib(bytes)}): none of this command's ${this.totalBytes} bytes of output are in its log`;
    return (
      `the full log keeps the first ${mib(this.headBytes)} and the last ${mib(this.ringLen)} of ${mib(this.totalBytes)}: ` +
      `${dropped} bytes in the middle were dropped (${name}: ${name === 'logs.maxSessionBytes' ? `what was left of ${mib(bytes)}` : mib(bytes)})`
    );
  }

  /** The log's size on disk once closed. */
  get diskBytes(): number {
    return this.endedBytes;
  }

  /** Closes the file, with the marker and the tail in place when bytes were dropped; safe to call twice. */
  end(): void {
    if (this.fd === undefined) return;
    const fd = this.fd;
    this.fd = undefined;
    try {
      const note = this.cutNote;
      if (note) {
        const marker = Buffer.from(`\n[genaicode-docker: ${note}]\n`);
        writeAll(fd, marker, marker.length);
        this.endedBytes += marker.length;
      }
      // Output that only just passed the head has its tail in the ring too, with nothing dropped.
      if (this.stoppedAtFree === undefined) this.copyRing(fd);
      this.endedBytes += this.headBytes + (this.stoppedAtFree === undefined ? this.ringLen : 0);
    } catch (e) {
      this.error ??= (e as Error).message;
    } finally {
      this.dropRing();
      try {
        closeSync(fd);
      } catch (e) {
        this.error ??= (e as Error).message;
      }
      this.limits?.settle?.(this.endedBytes);
    }
  }

  /** Past the head: into the ring, in place. A ring that cannot be made drops the tail (said by cutNote). */
  private writeTail(rest: Buffer): void {
    if (this.tailMax === 0 || this.ringFailed || !this.limits) return;
    if (this.ringFd === undefined) {
      try {
        this.ringFd = this.limits.files.create(this.ringPath);
      } catch (e) {
        swallowed(`the tail of ${this.path}`, e);
        this.ringFailed = true;
        return;
      }
    }
    const cap = this.tailMax;
    if (rest.length >= cap) {
      writeAll(this.ringFd, rest.subarray(rest.length - cap), cap, 0);
      this.ringPos = 0;
      this.ringLen = cap;
      return;
    }
    const first = Math.min(rest.length, cap - this.ringPos);
    writeAll(this.ringFd, rest, first, this.ringPos);
    if (first < rest.length) writeAll(this.ringFd, rest.subarray(first), rest.length - first, 0);
    this.ringPos = (this.ringPos + rest.length) % cap;
    this.ringLen = Math.min(cap, this.ringLen + rest.length);
  }

  private get ringPath(): string {
    return this.path.replace(/\.log$/, '.tail.log');
  }

  /** The ring's bytes after the head, oldest first. */
  private copyRing(fd: number): void {
    if (this.ringFd === undefined || this.ringLen === 0) return;
    const buf = Buffer.allocUnsafe(Math.min(COPY_CHUNK, this.ringLen));
    // Full: the oldest byte is at ringPos. Not full: it is at 0.
    const start = this.ringLen < this.tailMax ? 0 : this.ringPos;
    for (let done = 0; done < this.ringLen;) {
      const pos = (start + done) % this.tailMax;
      const n = readSync(this.ringFd, buf, 0, Math.min(buf.length, this.ringLen - done, this.tailMax - pos), pos);
      if (n === 0) throw new Error(`the tail of ${this.path} ended early`);
      writeAll(fd, buf, n);
      done += n;
    }
  }

  private dropRing(): void {
    if (this.ringFd === undefined) return;
    const ringFd = this.ringFd;
    this.ringFd = undefined;
    try {
      closeSync(ringFd);
      unlinkSync(this.ringPath);
    } catch (e) {
      swallowed(`removing the tail of ${this.path}`, e);
    }
  }

  /** True when the free space is under the floor: the log then stops growing. */
  private checkFree(): boolean {
    this.sinceFreeCheck = 0;
    const floor = this.limits?.minFreeBytes ?? 0;
    if (floor <= 0) return false;
    const free = freeBytes(dirname(this.path));
    if (free === undefined || free >= floor) return false;
    this.stoppedAtFree = free;
    return true;
  }
}

/** write(2) until every byte of `buf[0, n)` is written (at `position` when given). */
function writeAll(fd: number, buf: Buffer, n: number, position?: number): void {
  let off = 0;
  while (off < n) off += writeSync(fd, buf, off, n - off, position === undefined ? null : position + off);
}
