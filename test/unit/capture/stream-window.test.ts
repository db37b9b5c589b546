import { runInNewContext } from 'node:vm';
import { setFlagsFromString } from 'node:v8';
import { countNewlines, isBinary, StreamWindow, trimUtf8End, trimUtf8Start } from '../../../src/capture/stream-window.js';

const LOG = '/logs/session/0001-make.log';

function pushAll(w: StreamWindow, data: Buffer, chunkSize: number): void {
  for (let i = 0; i < data.length; i += chunkSize) w.push(data.subarray(i, i + chunkSize));
}

const MARKER = /\[\.\.\. (\d+) bytes, about (\d+) lines omitted of (\d+) bytes, (\d+) lines(?:; full output: ([^\]]+))? \.\.\.\]\n/;

/**
 * Splits a rendered, truncated text into head, marker fields and tail. `head` is the text
 * before the marker: the kept head, plus the newline render adds when the head does not end
 * with one (`headOf` removes it for a head known not to end with a newline).
 */
function parts(text: string) {
  const m = MARKER.exec(text);
  if (!m) throw new Error(`no marker in ${JSON.stringify(text.slice(0, 200))}`);
  return {
    head: text.slice(0, m.index),
    headOf: (expectedEndsWithNewline: boolean) =>
      expectedEndsWithNewline ? text.slice(0, m.index) : text.slice(0, m.index).replace(/\n$/, ''),
    tail: text.slice(m.index + m[0].length),
    omittedBytes: Number(m[1]),
    omittedLines: Number(m[2]),
    totalBytes: Number(m[3]),
    totalLines: Number(m[4]),
    logPath: m[5],
  };
}

describe('StreamWindow', () => {
  test('short output is returned whole', () => {
    const w = new StreamWindow(1024, 100);
    w.push(Buffer.from('hello\nwor'));
    w.push(Buffer.from('ld\n'));
    expect(w.render(LOG)).toEqual({ text: 'hello\nworld\n', truncated: false, binary: false });
    expect(w.truncated).toBe(false);
    expect(w.bytes).toBe(12);
    expect(w.lines).toBe(2);
  });

  test('exactly maxBytes is still whole', () => {
    const w = new StreamWindow(256, 100);
    const data = Buffer.alloc(256, 'a');
    pushAll(w, data, 7);
    expect(w.render(LOG)).toEqual({ text: data.toString(), truncated: false, binary: false });
  });

  test('empty output renders as empty', () => {
    const w = new StreamWindow(256, 10);
    w.push(Buffer.alloc(0));
    expect(w.render(LOG)).toEqual({ text: '', truncated: false, binary: false });
    expect([w.bytes, w.lines]).toEqual([0, 0]);
  });

  test('over maxBytes: head + marker + tail, exact omitted bytes, log path in the marker', () => {
    const lines = Array.from({ length: 100 }, (_, i) => `L${String(i).padStart(3, '0')} `.padEnd(99, 'abcdefghij') + '\n');
    const data = Buffer.from(lines.join(''));
    expect(data.length).toBe(10_000);
    for (const chunk of [1, 7, 100, 4096, 10_000]) {
      const w = new StreamWindow(1024, 1000);
      pushAll(w, data, chunk);
      const r = w.render(LOG);
      expect(r.truncated).toBe(true);
      expect(r.binary).toBe(false);
      const p = parts(r.text);
      expect(p.head).toBe(`${data.subarray(0, 512).toString()}\n`);
      expect(p.tail).toBe(data.subarray(10_000 - 512).toString());
      expect(p.omittedBytes).toBe(10_000 - 1024);
      expect(p.totalBytes).toBe(10_000);
      expect(p.totalLines).toBe(100);
      expect(p.logPath).toBe(LOG);
    }
  });

  test('without a log path the marker has none', () => {
    const w = new StreamWindow(256, 100);
    w.push(Buffer.alloc(1000, 'x'));
    expect(w.render().text).not.toContain('full output');
  });

  test('over maxLines with short lines: line-capped head and tail', () => {
    const data = Buffer.from(Array.from({ length: 100 }, (_, i) => `line ${String(i).padStart(2, '0')}\n`).join(''));
    const w = new StreamWindow(16_384, 10);
    pushAll(w, data, 13);
    expect(w.bytes).toBe(800);
    expect(w.lines).toBe(100);
    expect(w.truncated).toBe(true);
    const r = w.render(LOG);
    expect(r.truncated).toBe(true);
    const p = parts(r.text);
    expect(p.head).toBe('line 00\nline 01\nline 02\nline 03\nline 04\n');
    expect(p.tail).toBe('line 95\nline 96\nline 97\nline 98\nline 99\n');
    expect(p.omittedBytes).toBe(800 - 80);
    expect(p.totalLines).toBe(100);
    expect(r.text.split('\n').length - 1).toBeLessThanOrEqual(11);
  });

  test('the omitted line count is exact when head and tail are whole lines (output ending with a newline)', () => {
    // lines 05..94 are left out: 90 lines, 720 bytes.
    for (const endsWithNewline of [true, false]) {
      const text = Array.from({ length: 100 }, (_, i) => `line ${String(i).padStart(2, '0')}`).join('\n') + (endsWithNewline ? '\n' : '');
      const w = new StreamWindow(16_384, 10);
      w.push(Buffer.from(text));
      const p = parts(w.render(LOG).text);
      expect({ endsWithNewline, omittedBytes: p.omittedBytes, omittedLines: p.omittedLines }).toEqual({
        endsWithNewline,
        omittedBytes: 720,
        omittedLines: 90,
      });
    }
  });

  test.each<[string[], number, number]>([
    [[], 0, 0],
    [['a'], 1, 1],
    [['a\n'], 2, 1],
    [['a\nb'], 3, 2],
    [['a', '\n', 'b', '\n'], 4, 2],
    [['\n\n'], 2, 2],
    [['x\ny\nlast line without newline'], 29, 3],
  ])('counts %p: %p bytes, %p lines', (chunks, bytes, lines) => {
    const w = new StreamWindow(1024, 100);
    for (const c of chunks) w.push(Buffer.from(c));
    expect([w.bytes, w.lines]).toEqual([bytes, lines]);
  });

  test('counts stay exact far past the window', () => {
    const w = new StreamWindow(256, 10);
    const chunk = Buffer.from('0123456789abcde\n'); // 16 bytes, 1 line
    for (let i = 0; i < 5000; i++) w.push(chunk);
    w.push(Buffer.from('tail'));
    expect([w.bytes, w.lines]).toEqual([5000 * 16 + 4, 5001]);
  });

  test('UTF-8: cut points never produce U+FFFD at the edges', () => {
    for (const ch of ['é', '€', '😀']) {
      const data = Buffer.from(ch.repeat(400));
      for (let maxBytes = 256; maxBytes < 272; maxBytes++) {
        const w = new StreamWindow(maxBytes, 1000);
        pushAll(w, data, 5);
        const r = w.render(LOG);
        expect(r.truncated).toBe(true);
        expect(r.text).not.toContain('\ufffd');
        const p = parts(r.text);
        const head = p.headOf(false);
        expect(data.toString().startsWith(head)).toBe(true);
        expect(data.toString().endsWith(p.tail)).toBe(true);
        expect(p.omittedBytes).toBe(data.length - Buffer.byteLength(head) - Buffer.byteLength(p.tail));
      }
    }
  });

  test('trimUtf8End / trimUtf8Start at every cut of 1- to 4-byte characters', () => {
    const text = 'aé€😀b€é😀';
    const buf = Buffer.from(text);
    for (let cut = 0; cut <= buf.length; cut++) {
      const end = trimUtf8End(buf.subarray(0, cut)).toString();
      const start = trimUtf8Start(buf.subarray(cut)).toString();
      expect(end).not.toContain('\ufffd');
      expect(start).not.toContain('\ufffd');
      expect(text.startsWith(end)).toBe(true);
      expect(text.endsWith(start)).toBe(true);
      // At most one character is lost on each side.
      expect(Buffer.byteLength(end)).toBeGreaterThan(cut - 4);
      expect(Buffer.byteLength(start)).toBeGreaterThan(buf.length - cut - 4);
    }
    expect(trimUtf8End(Buffer.from('abc')).toString()).toBe('abc');
    expect(trimUtf8Start(Buffer.from('abc')).toString()).toBe('abc');
  });

  test('binary output (NUL bytes) becomes a note, not garbage', () => {
    const w = new StreamWindow(1024, 100);
    w.push(Buffer.from([0x7f, 0x45, 0x4c, 0x46, 0x02, 0x01, 0x01, 0x00, 0x00, 0x00]));
    const r = w.render(LOG);
    expect(r).toEqual({ text: `[binary output: 10 bytes, not shown; exact bytes in ${LOG}]`, truncated: true, binary: true });
  });

  test('long binary output is a note too', () => {
    const w = new StreamWindow(1024, 100);
    const data = Buffer.from(Array.from({ length: 100_000 }, (_, i) => (i * 31) % 256));
    pushAll(w, data, 4096);
    const r = w.render(LOG);
    expect(r.binary).toBe(true);
    expect(r.text).toBe(`[binary output: 100000 bytes, not shown; exact bytes in ${LOG}]`);
    expect(r.text).not.toContain('\u0000');
  });

  test('isBinary: text with a few invalid bytes is still text; mostly invalid bytes are binary', () => {
    expect(isBinary(Buffer.from('plain text\n'))).toBe(false);
    expect(isBinary(Buffer.concat([Buffer.from('x'.repeat(1000)), Buffer.from([0xff])]))).toBe(false);
    expect(isBinary(Buffer.alloc(200, 0xff))).toBe(true);
    expect(isBinary(Buffer.from([0x41, 0x00]))).toBe(true);
  });
});

describe('countNewlines', () => {
  function naive(buf: Buffer): number {
    let n = 0;
    for (const b of buf) if (b === 10) n++;
    return n;
  }

  test('matches a byte-by-byte count at every alignment and length, whatever the other bytes are', () => {
    // Bytes next to 0x0A in value (0x0B, 0x8A, 0x09) and 0x00/0x80/0xFF stress a word-at-a-time count.
    const alphabet = [0x0a, 0x0a, 0x0b, 0x8a, 0x09, 0x00, 0x80, 0xff, 0x7f, 0x41];
    let seed = 12345;
    const rnd = () => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32;
    const big = Buffer.from(Array.from({ length: 4096 }, () => alphabet[Math.floor(rnd() * alphabet.length)]!));
    for (let offset = 0; offset < 8; offset++) {
      for (let length = 0; length <= 67; length++) {
        const view = big.subarray(offset, offset + length);
        expect(countNewlines(view)).toBe(naive(view));
      }
      const view = big.subarray(offset);
      expect(countNewlines(view)).toBe(naive(view));
    }
    expect(countNewlines(Buffer.alloc(1001, 10))).toBe(1001);
    // Past 255 words of nothing but newlines: every byte lane of the word count is full.
    expect(countNewlines(Buffer.alloc(300_001, 10))).toBe(300_001);
    const dense = Buffer.from(Array.from({ length: 200_000 }, () => alphabet[Math.floor(rnd() * alphabet.length)]!));
    expect(countNewlines(dense.subarray(3))).toBe(naive(dense.subarray(3)));
    expect(countNewlines(Buffer.alloc(1001, 0x8a))).toBe(0);
    expect(countNewlines(Buffer.alloc(0))).toBe(0);
  });
});

describe('StreamWindow memory stays bounded', () => {
  const MAX = 16 * 1024;
  const MiB = 1024 * 1024;

  function checkBounded(w: StreamWindow, totalBytes: number, totalLines: number): void {
    expect(w.bytes).toBe(totalBytes);
    expect(w.lines).toBe(totalLines);
    const r = w.render(LOG);
    expect(r.truncated).toBe(true);
    // What is retained is what can be rendered: about the byte budget, plus the marker.
    expect(Buffer.byteLength(r.text)).toBeLessThanOrEqual(MAX + 200);
    const p = parts(r.text);
    // The content has a newline every 64 bytes, so the kept head ends with one.
    expect(p.omittedBytes).toBe(totalBytes - Buffer.byteLength(p.headOf(true)) - Buffer.byteLength(p.tail));
  }

  test('64 MiB in 64 KiB chunks', () => {
    const w = new StreamWindow(MAX, 1_000_000);
    const chunk = Buffer.from('y'.repeat(63) + '\n').subarray(0, 64);
    const big = Buffer.concat(Array.from({ length: 1024 }, () => chunk)); // 64 KiB, 1024 lines
    expect(() => {
      for (let i = 0; i < 1024; i++) w.push(Buffer.from(big));
    }).not.toThrow();
    checkBounded(w, 64 * MiB, 1024 * 1024);
  });

  test('many 1-byte chunks (4 MiB: 256 times the window; 64 MiB at one byte per push takes over a minute under jest)', () => {
    const w = new StreamWindow(MAX, 1_000_000);
    const x = Buffer.from('x');
    const nl = Buffer.from('\n');
    const total = 4 * MiB;
    expect(() => {
      for (let i = 0; i < total; i++) w.push((i & 63) === 63 ? nl : x);
    }).not.toThrow();
    checkBounded(w, total, total / 64);
  });

  test('pushed chunks are not retained (checked with the garbage collector)', async () => {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    const w = new StreamWindow(MAX, 1_000_000);
    const refs: Array<WeakRef<Buffer>> = [];
    for (let i = 0; i < 1024; i++) {
      const chunk = Buffer.alloc(64 * 1024, i % 2 ? 'a' : 'b');
      if (i % 64 === 0) refs.push(new WeakRef(chunk));
      w.push(chunk);
    }
    // WeakRefs are kept alive until the current job ends.
    await new Promise((r) => setImmediate(r));
    gc();
    await new Promise((r) => setImmediate(r));
    gc();
    expect(refs.filter((r) => r.deref() !== undefined)).toHaveLength(0);
    expect(w.bytes).toBe(64 * MiB);
  });
});
