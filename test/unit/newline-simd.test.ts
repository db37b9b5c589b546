import { countNewlinesSimd, NEWLINE_COUNTER_WASM } from '../../src/capture/newline-simd.js';
import { countNewlines, countNewlinesSwar } from '../../src/capture/stream-window.js';

function naive(buf: Uint8Array): number {
  let n = 0;
  for (const b of buf) if (b === 10) n++;
  return n;
}

// Bytes next to 0x0A in value (0x0B, 0x8A, 0x09) and 0x00/0x80/0xFF stress word and lane counts.
const alphabet = [0x0a, 0x0a, 0x0b, 0x8a, 0x09, 0x00, 0x80, 0xff, 0x7f, 0x41];
let seed = 4242;
const rnd = () => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32;
const big = Buffer.from(Array.from({ length: 300_000 }, () => alphabet[Math.floor(rnd() * alphabet.length)]!));
// 16-byte blocks, a batch of 255 blocks (4080 bytes), the module's 64 KiB page, and around them.
const LENGTHS = [0, 1, 15, 16, 17, 31, 33, 4079, 4080, 4081, 4096, 65_535, 65_536, 65_537, 131_073, 299_980];

describe('the WebAssembly SIMD newline counter', () => {
  test('the module is valid WebAssembly on this runtime (Node 20 has SIMD)', () => {
    const wasm = (globalThis as unknown as { WebAssembly: { validate(b: Uint8Array): boolean } }).WebAssembly;
    expect(wasm.validate(NEWLINE_COUNTER_WASM)).toBe(true);
    expect(countNewlinesSimd(Buffer.from('a\nb\n'))).toBe(2);
  });

  test('matches a byte-by-byte count at every alignment, across blocks, batches and pages', () => {
    for (let offset = 0; offset < 17; offset++) {
      for (const length of LENGTHS) {
        const view = big.subarray(offset, offset + length);
        expect({ offset, length, n: countNewlinesSimd(view) }).toEqual({ offset, length, n: naive(view) });
      }
    }
  });

  test('a range of a buffer; all newlines fill every lane of a batch without overflow', () => {
    expect(countNewlinesSimd(big, 1000, 250_000)).toBe(naive(big.subarray(1000, 250_000)));
    expect(countNewlinesSimd(Buffer.alloc(300_001, 10))).toBe(300_001);
    expect(countNewlinesSimd(Buffer.alloc(300_001, 0x8a))).toBe(0);
  });
});

describe('countNewlines and its JS fallback agree with a byte-by-byte count', () => {
  test.each(LENGTHS)('length %p at offsets 0-7', (length) => {
    for (let offset = 0; offset < 8; offset++) {
      const view = big.subarray(offset, offset + length);
      const want = naive(view);
      expect(countNewlines(view)).toBe(want);
      expect(countNewlinesSwar(view)).toBe(want);
    }
  });
});
