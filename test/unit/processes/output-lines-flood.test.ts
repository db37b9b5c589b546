import { OutputLines } from '../../../src/processes/output-lines.js';

/**
 * A process that writes a byte at a time reaches the plugin as one engine frame per write:
 * the window must hold its bytes, not an object per chunk (a million one-byte chunks held one
 * by one cost a hundred times the window in the plugin's heap, per process).
 */
const WINDOW = 512 * 1024;

/** Heap and buffer memory the window holds after `feed` (measured around it; the feed allocates nothing of its own). */
function heldAfter(feed: (w: OutputLines) => void): { w: OutputLines; held: number } {
  const before = process.memoryUsage();
  const w = new OutputLines(WINDOW);
  feed(w);
  const after = process.memoryUsage();
  return { w, held: after.heapUsed - before.heapUsed + (after.arrayBuffers - before.arrayBuffers) };
}

// Generous: sixteen times the window, far under an object per byte (about a hundred times it).
const BOUND = 16 * WINDOW;
/** A little past the window, so that the oldest bytes leave it too. */
const FEED = WINDOW + 4096;

describe('OutputLines under a flood of tiny chunks', () => {
  test('a byte at a time: memory stays near the window, and the lines stay exact', () => {
    const one = Buffer.from('x');
    const nl = Buffer.from('\n');
    const { w, held } = heldAfter((w) => {
      for (let i = 0; i < FEED; i++) w.push(i % 8 === 7 ? nl : one);
    });
    expect(held).toBeLessThan(BOUND);
    expect(w.completeLines).toBe(FEED / 8);
    const r = w.since(w.completeLines - 2);
    expect(r.bytes.toString()).toBe('xxxxxxx\nxxxxxxx\n');
  });

  test('a newline at a time (a flood of empty lines): memory stays near the window', () => {
    const nl = Buffer.from('\n');
    const { w, held } = heldAfter((w) => {
      for (let i = 0; i < FEED; i++) w.push(nl);
    });
    expect(held).toBeLessThan(BOUND);
    expect(w.completeLines).toBe(FEED);
    expect(w.since(0)).toMatchObject({ fromLine: FEED - WINDOW + 1, missed: FEED - WINDOW, toLine: FEED });
  });

  test('chunks of one and three bytes mixed with a large one: memory stays near the window, the text is whole', () => {
    const a = Buffer.from('a');
    const bcd = Buffer.from('bc\n');
    const big = Buffer.from(`${'y'.repeat(99_999)}\n`);
    const { w, held } = heldAfter((w) => {
      for (let i = 0; i < FEED / 2; i++) {
        w.push(i % 2 ? bcd : a);
        if (i === FEED / 4) w.push(big);
      }
    });
    expect(held).toBeLessThan(BOUND);
    const tail = w.since(w.completeLines - 3).bytes.toString();
    expect(tail).toBe('abc\nabc\nabc\n');
    expect(w.since(0).bytes.length).toBeLessThanOrEqual(WINDOW);
  });
});
