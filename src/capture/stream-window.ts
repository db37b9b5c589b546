/**
 * Keeps what a model may see of one output stream, capped at capture time: the first
 * `maxBytes` bytes (enough to return short output whole) and a ring of the last
 * `maxBytes / 2` bytes. Bytes are copied in, so memory stays bounded whatever the
 * command prints and however the engine chunks it.
 */
export class StreamWindow {
  private readonly head: Buffer;
  private headLen = 0;
  private headLines = 0;
  private headFull = false;
  private readonly ring: Buffer;
  private ringPos = 0;
  private ringLen = 0;
  private total = 0;
  private newlines = 0;
  private lastByte = -1;

  constructor(
    readonly maxBytes: number,
    readonly maxLines: number,
  ) {
    this.head = Buffer.allocUnsafe(maxBytes);
    this.ring = Buffer.allocUnsafe(Math.max(1, Math.floor(maxBytes / 2)));
  }

  push(chunk: Buffer): void {
    const n = chunk.length;
    if (n === 0) return;
    this.total += n;
    this.lastByte = chunk[n - 1]!;
    this.newlines += countNewlines(chunk);
    if (!this.headFull) this.pushHead(chunk);
    this.pushRing(chunk);
  }

  private pushHead(chunk: Buffer): void {
    let take = Math.min(chunk.length, this.head.length - this.headLen);
    // Stop at the line limit too: past maxLines the answer will be cut anyway.
    let pos = -1;
    while (take > 0 && (pos = chunk.indexOf(10, pos + 1)) !== -1 && pos < take) {
      if (++this.headLines > this.maxLines) {
        take = pos + 1;
        this.headFull = true;
        break;
      }
    }
    chunk.copy(this.head, this.headLen, 0, take);
    this.headLen += take;
    if (this.headLen === this.head.length) this.headFull = true;
  }

  private pushRing(chunk: Buffer): void {
    const cap = this.ring.length;
    if (chunk.length >= cap) {
      chunk.copy(this.ring, 0, chunk.length - cap);
      this.ringPos = 0;
      this.ringLen = cap;
      return;
    }
    const first = Math.min(chunk.length, cap - this.ringPos);
    chunk.copy(this.ring, this.ringPos, 0, first);
    if (first < chunk.length) chunk.copy(this.ring, 0, first);
    this.ringPos = (this.ringPos + chunk.length) % cap;
    this.ringLen = Math.min(cap, this.ringLen + chunk.length);
  }

  get bytes(): number {
    return this.total;
  }

  /** Lines as a person counts them: a last line without a newline still counts. */
  get lines(): number {
    return this.newlines + (this.total > 0 && this.lastByte !== 10 ? 1 : 0);
  }

  /** True when what `render` returns is less than everything the stream carried. */
  get truncated(): boolean {
    return this.total > this.maxBytes || this.lines > this.maxLines;
  }

  /**
   * The text for the answer: the whole output when it fits; else its head and tail
   * (half the byte and line budget each) around a marker saying what was left out.
   */
  render(logPath?: string): { text: string; truncated: boolean; binary: boolean } {
    if (this.total === 0) return { text: '', truncated: false, binary: false };
    if (!this.truncated) {
      const whole = this.head.subarray(0, this.headLen);
      if (!isBinary(whole)) return { text: whole.toString('utf8'), truncated: false, binary: false };
      const mixed = textSegments(whole);
      return mixed
        ? { text: mixed, truncated: true, binary: false }
        : { text: binaryNote(this.total, logPath), truncated: true, binary: true };
    }
    const halfBytes = Math.floor(this.maxBytes / 2);
    const halfLines = Math.floor(this.maxLines / 2);
    const head = trimUtf8End(keepFirstLines(this.head.subarray(0, Math.min(this.headLen, halfBytes)), halfLines));
    const tail = trimUtf8Start(keepLastLines(this.ringContents(), halfLines));
    const headText = isBinary(head) ? textSegments(head) : head.toString('utf8');
    const tailText = isBinary(tail) ? textSegments(tail) : tail.toString('utf8');
    if (headText === undefined || tailText === undefined) return { text: binaryNote(this.total, logPath), truncated: true, binary: true };
    const shownLines = countNewlines(head) + countNewlines(tail) + (tail.length > 0 && tail[tail.length - 1] !== 10 ? 1 : 0);
    const omittedBytes = Math.max(0, this.total - head.length - tail.length);
    const marker =
      `[... ${omittedBytes} bytes, about ${Math.max(0, this.lines - shownLines)} lines omitted of ${this.total} bytes, ${this.lines} lines` +
      `${logPath ? `; full output: ${logPath}` : ''} ...]`;
    return { text: `${headText}${headText.endsWith('\n') ? '' : '\n'}${marker}\n${tailText}`, truncated: true, binary: false };
  }

  private ringContents(): Buffer {
    if (this.ringLen < this.ring.length) return this.ring.subarray(0, this.ringLen);
    return Buffer.concat([this.ring.subarray(this.ringPos), this.ring.subarray(0, this.ringPos)]);
  }
}

/**
 * Counts '\n' bytes. Every byte of a command's output passes here, so it is tuned:
 * indexOf (memchr, about 30 ns a call) while newlines are sparse, since most of a huge
 * output is often long lines or binary; once they turn out dense, the rest of the chunk is
 * counted four bytes at a time (about 0.3 s per GiB of 2-byte lines, measured), where
 * indexOf in a loop would fall to ~20 MB/s. (A WebAssembly SIMD count did 0.05 s, but the
 * 1 GiB target holds without it: 1.18x the docker CLI, 1.25x on 80-byte lines.)
 */
export function countNewlines(buf: Buffer): number {
  let count = 0;
  let pos = buf.indexOf(10);
  while (pos !== -1) {
    count++;
    // Denser so far than the point where counting every byte is cheaper than indexOf.
    if (count >= 16 && pos < count * DENSE_BYTES_PER_NEWLINE) {
      return count + countNewlinesSwar(buf, pos + 1);
    }
    pos = buf.indexOf(10, pos + 1);
  }
  return count;
}

/** Break-even of indexOf (per newline) against counting every byte four at a time. */
const DENSE_BYTES_PER_NEWLINE = 48;

/**
 * Four bytes a word: with x = word ^ 0x0a0a0a0a, the high bit of each byte of
 * ~(((x & 0x7f..) + 0x7f..) | x | 0x7f..) is set exactly where that byte of x is zero (a
 * newline). Shifted down, those bits add up in four byte-wide lanes, folded into the count
 * every 255 words, before a lane could overflow.
 */
function countNewlinesSwar(buf: Buffer, from = 0): number {
  const n = buf.length;
  let count = 0;
  let i = from;
  while (i < n && ((buf.byteOffset + i) & 3) !== 0) {
    if (buf[i] === 10) count++;
    i++;
  }
  const words = (n - i) >>> 2;
  if (words > 0) {
    const view = new Uint32Array(buf.buffer, buf.byteOffset + i, words);
    let k = 0;
    while (k < words) {
      const stop = Math.min(words, k + 255);
      let lanes = 0;
      for (; k < stop; k++) {
        const x = view[k]! ^ 0x0a0a0a0a;
        lanes += (~(((x & 0x7f7f7f7f) + 0x7f7f7f7f) | x | 0x7f7f7f7f) >>> 7) & 0x01010101;
      }
      lanes = (lanes & 0x00ff00ff) + ((lanes >>> 8) & 0x00ff00ff);
      count += (lanes & 0xffff) + (lanes >>> 16);
    }
    i += words << 2;
  }
  for (; i < n; i++) if (buf[i] === 10) count++;
  return count;
}

function keepFirstLines(buf: Buffer, maxLines: number): Buffer {
  let pos = -1;
  for (let i = 0; i < maxLines; i++) {
    pos = buf.indexOf(10, pos + 1);
    if (pos === -1) return buf;
  }
  return buf.subarray(0, pos + 1);
}

function keepLastLines(buf: Buffer, maxLines: number): Buffer {
  // Ignore a final newline so "a\nb\n" keeps b as its last line.
  let pos = buf.length - (buf[buf.length - 1] === 10 ? 1 : 0);
  for (let i = 0; i < maxLines; i++) {
    pos = buf.lastIndexOf(10, pos - 1);
    if (pos === -1) return buf;
  }
  return buf.subarray(pos + 1);
}

/** Drops an incomplete UTF-8 sequence at the end (a cut in the middle of a character). */
export function trimUtf8End(buf: Buffer): Buffer {
  let i = buf.length - 1;
  let cont = 0;
  while (i >= 0 && cont < 3 && (buf[i]! & 0xc0) === 0x80) {
    i--;
    cont++;
  }
  if (i < 0) return buf;
  const lead = buf[i]!;
  const need = lead >= 0xf0 ? 3 : lead >= 0xe0 ? 2 : lead >= 0xc0 ? 1 : 0;
  return need > cont ? buf.subarray(0, i) : buf;
}

/** Drops continuation bytes at the start (the tail of a character cut in two). */
export function trimUtf8Start(buf: Buffer): Buffer {
  let i = 0;
  while (i < buf.length && i < 3 && (buf[i]! & 0xc0) === 0x80) i++;
  return buf.subarray(i);
}

/** NUL bytes, or many bytes that are not valid UTF-8: not text a model can use. */
export function isBinary(buf: Buffer): boolean {
  if (buf.length === 0) return false;
  if (buf.indexOf(0) !== -1) return true;
  const text = buf.toString('utf8');
  let bad = 0;
  for (const ch of text) if (ch === '\ufffd') bad++;
  return bad > 8 && bad * 10 > text.length / 10;
}

/**
 * A line that is not text: a NUL, or bytes that are not UTF-8 or are control characters
 * (other than tab, carriage return and the escape of colour codes) in a tenth of it.
 */
export function isBinaryLine(text: string): boolean {
  // Most lines are plain printable text: one search settles them.
  if (!NOT_PLAIN.test(text)) return false;
  let bad = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0) return true;
    if (c === 0xfffd || c === 0x7f || (c < 0x20 && c !== 9 && c !== 10 && c !== 13 && c !== 27)) bad++;
  }
  return bad > 0 && (bad >= 2 || text.length < 8) && bad * 10 >= text.length;
}

// eslint-disable-next-line no-control-regex -- finding control characters is the point
const NOT_PLAIN = /[\x00-\x08\x0b\x0c\x0e-\x1a\x1c-\x1f\x7f\ufffd]/;

/** A short line between binary ones is a piece of the binary data, not text. */
const MIN_TEXT_BETWEEN_BINARY = 16;

/**
 * Output with text and binary data mixed (`cat logs/*` over a gzip member): the text
 * lines, each run of binary lines replaced by a note of its size. Undefined when text is
 * less than a hundredth of it: then the whole output is described as binary.
 */
export function textSegments(buf: Buffer): string | undefined {
  const parts: string[] = [];
  let run = 0;
  let textBytes = 0;
  const flush = () => {
    if (run) parts.push(`[binary data: ${run} bytes, not shown]\n`);
    run = 0;
  };
  for (let start = 0; start < buf.length;) {
    const nl = buf.indexOf(10, start);
    const end = nl === -1 ? buf.length : nl + 1;
    const text = buf.toString('utf8', start, end);
    if (isBinaryLine(text) || (run > 0 && end - start < MIN_TEXT_BETWEEN_BINARY)) run += end - start;
    else {
      flush();
      parts.push(text);
      textBytes += end - start;
    }
    start = end;
  }
  flush();
  return textBytes > 0 && textBytes * 100 >= buf.length ? parts.join('') : undefined;
}

function binaryNote(bytes: number, logPath?: string): string {
  return `[binary output: ${bytes} bytes, not shown${logPath ? `; exact bytes in ${logPath}` : ''}]`;
}
