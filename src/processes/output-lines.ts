import { countNewlines } from '../capture/stream-window.js';

/** What a read since a line finds: the bytes of lines `fromLine`..`toLine` (1-based), and how many asked for are gone. */
export interface LinesSince {
  /** The first line returned (the line after the one asked for, or the window's first). */
  fromLine: number;
  /** The last complete line returned (`fromLine - 1` when none); a partial last line is in `bytes` after it. */
  toLine: number;
  bytes: Buffer;
  /** Lines after the one asked for that have left the window (they are in the log only). */
  missed: number;
  /** The bytes end with a line that has no newline yet: the next read returns it again, whole. */
  partial: boolean;
}

/**
 * The last `capBytes` of a background process's output, in memory, with line numbers: the
 * model reads "what is new since line N" without the log being read back from disk. Bytes are
 * copied in as they come and dropped from the front a chunk at a time; only newlines are
 * counted on the way in (a flood of short lines costs a count, never a string per line), and
 * a read finds its line by counting newlines from the window's start. Bytes are copied into
 * slabs of `SLAB_BYTES`, never kept as the chunks they came in: a process writing a byte at a
 * time reaches us as a frame per write, and an object per byte would cost a hundred times the
 * window (and dropping from the front of a list of a million would be quadratic).
 */
/** Bytes per slab of the window: a read joins a few dozen of them, never a chunk per write. */
const SLAB_BYTES = 64 * 1024;

interface Slab {
  buf: Buffer;
  from: number;
  to: number;
}

export class OutputLines {
  /** The window's bytes in order: each slab's bytes `from`..`to`; only the last has room left. */
  private slabs: Slab[] = [];
  private bytes = 0;
  /** Complete lines before the window's first byte. */
  private linesBefore = 0;
  /** Whether the window's first byte starts a line (else it is the middle of line `linesBefore + 1`). */
  private startsLine = true;
  private newlines = 0;
  private lastByte = -1;
  /** Bytes ever pushed: a reader that saw this many has nothing new to look at. */
  private pushed = 0;

  constructor(readonly capBytes: number) {}

  /** Bytes pushed so far (kept or not): changes exactly when there is new output. */
  get totalBytes(): number {
    return this.pushed;
  }

  push(chunk: Buffer): void {
    if (chunk.length === 0) return;
    this.pushed += chunk.length;
    // Only the last capBytes of a chunk larger than the window can stay: the window goes, then the chunk's head.
    const kept = chunk.length > this.capBytes ? chunk.subarray(chunk.length - this.capBytes) : chunk;
    if (kept !== chunk) {
      for (const old of this.slabs) this.drop(old.buf.subarray(old.from, old.to), false);
      this.slabs = [];
      this.bytes = 0;
      this.drop(chunk.subarray(0, chunk.length - kept.length), true);
    }
    this.newlines += countNewlines(kept);
    this.lastByte = chunk[chunk.length - 1]!;
    this.append(kept);
    while (this.bytes > this.capBytes) {
      const first = this.slabs[0]!;
      const over = this.bytes - this.capBytes;
      const take = Math.min(over, first.to - first.from);
      this.drop(first.buf.subarray(first.from, first.from + take), false);
      first.from += take;
      this.bytes -= take;
      if (first.from === first.to) this.slabs.shift();
    }
  }

  /** Copies `bytes` into the last slab's room, then into new slabs (at most capBytes + SLAB_BYTES held). */
  private append(bytes: Buffer): void {
    let at = 0;
    while (at < bytes.length) {
      let last = this.slabs[this.slabs.length - 1];
      if (!last || last.to === last.buf.length) {
        last = { buf: Buffer.allocUnsafeSlow(Math.min(SLAB_BYTES, Math.max(1, this.capBytes))), from: 0, to: 0 };
        this.slabs.push(last);
      }
      const n = bytes.copy(last.buf, last.to, at);
      last.to += n;
      at += n;
    }
    this.bytes += bytes.length;
  }

  /** Complete lines so far (a last line without its newline is not counted yet). */
  get completeLines(): number {
    return this.linesBefore + this.newlines;
  }

  /** Lines as a person counts them: a last line without a newline counts. */
  get lines(): number {
    return this.completeLines + (this.lastByte !== -1 && this.lastByte !== 10 ? 1 : 0);
  }

  /** The lines after line `after` (0: from the start) that are still in the window. */
  since(after: number): LinesSince {
    const want = Math.max(0, Math.floor(after));
    const parts = this.slabs.map((sl) => sl.buf.subarray(sl.from, sl.to));
    const all = parts.length === 1 ? parts[0]! : Buffer.concat(parts);
    // The first whole line in the window, and the byte where it starts.
    let start = 0;
    let firstLine = this.linesBefore + 1;
    if (!this.startsLine) {
      const nl = all.indexOf(10);
      start = nl === -1 ? all.length : nl + 1;
      firstLine += 1;
    }
    let fromLine = Math.max(want + 1, firstLine);
    for (let line = firstLine; line < fromLine && start < all.length; line++) {
      const nl = all.indexOf(10, start);
      start = nl === -1 ? all.length : nl + 1;
    }
    const total = this.completeLines;
    if (fromLine > total + 1) fromLine = total + 1;
    const bytes = all.subarray(Math.min(start, all.length));
    const partial = bytes.length > 0 && bytes[bytes.length - 1] !== 10;
    return { fromLine, toLine: total, bytes, missed: Math.max(0, firstLine - (want + 1)), partial };
  }

  /** Bytes leave the window: their newlines move into the count before it. */
  private drop(gone: Buffer, beforeCounting: boolean): void {
    const n = countNewlines(gone);
    this.linesBefore += n;
    if (!beforeCounting) this.newlines -= n;
    if (gone.length > 0) {
      // The window now starts a line when the last byte dropped was a newline.
      this.startsLine = gone[gone.length - 1] === 10;
    }
  }
}
