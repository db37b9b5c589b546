/**
 * Logs that cannot fill a disk: a command's log keeps its head and tail within
 * logs.maxCommandBytes, the session's logs stay within logs.maxSessionBytes together, and
 * no log grows while the disk has less than logs.minFreeBytes free. Every variant writes
 * far more than the caps, the way a runaway command would.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { LogStore, type LogLimits } from '../../../src/capture/log-store.js';
import { freeBytes } from '../../../src/capture/log-sink.js';
import { removeTempDirs, tempDir } from '../helpers.js';

afterAll(removeTempDirs);

const MiB = 1024 ** 2;
const RETENTION = { maxAgeDays: 14, maxTotalBytes: 1024 ** 3 };

/** Numbered 16-byte records: which ones a log kept tells where it cut. */
function records(from: number, count: number): Buffer {
  return Buffer.from(Array.from({ length: count }, (_, i) => `rec${String(from + i).padStart(12, '0')}\n`).join(''));
}

function store(limits: Partial<LogLimits>): LogStore {
  return new LogStore(tempDir('gcd-logcap-'), 's', { ...RETENTION, ...limits });
}

/** Writes `total` bytes of records in chunks of the sizes given (cycled); returns the sink, closed. */
function flood(s: LogStore, total: number, chunkSizes: number[]) {
  const sink = s.create('flood');
  const all = records(0, total / 16);
  for (let off = 0, i = 0; off < all.length; i++) {
    const n = Math.min(chunkSizes[i % chunkSizes.length]!, all.length - off);
    sink.write(all.subarray(off, off + n));
    off += n;
  }
  sink.end();
  return { sink, all };
}

describe('one command over logs.maxCommandBytes', () => {
  // Chunks smaller than the tail, larger than it, and ones that cross the ring's end.
  test.each([
    ['64 KiB chunks', [64 * 1024]],
    ['chunks larger than the tail', [3 * MiB]],
    ['odd chunk sizes that wrap the ring at every offset', [4093, 65521, 1, 700_001]],
    ['one write of everything', [1024 * MiB]],
  ])('%s: the first and last halves kept in order, the middle dropped and said so', (_name, sizes) => {
    const cap = 2 * MiB;
    const total = 24 * MiB;
    const { sink, all } = flood(store({ maxCommandBytes: cap }), total, sizes);
    expect(sink.error).toBeUndefined();
    const log = readFileSync(sink.path);
    expect(log.length).toBeLessThan(cap + 1024);
    expect(log.subarray(0, cap / 2).equals(all.subarray(0, cap / 2))).toBe(true);
    expect(log.subarray(log.length - cap / 2).equals(all.subarray(all.length - cap / 2))).toBe(true);
    const marker = log.subarray(cap / 2, log.length - cap / 2).toString();
    expect(marker).toContain(`${total - cap} bytes in the middle were dropped`);
    expect(marker).toContain('logs.maxCommandBytes');
    expect(sink.totalBytes).toBe(total);
    expect(sink.cutNote).toContain(`${total - cap} bytes`);
    // The ring beside it is gone: only the log is left.
    expect(readdirSync(join(sink.path, '..')).filter((f) => f.endsWith('.log'))).toEqual([sink.path.split('/').pop()]);
  });

  test('output under the cap is kept whole, with no marker and no note', () => {
    const { sink, all } = flood(store({ maxCommandBytes: 4 * MiB }), 4 * MiB, [100_000]);
    expect(readFileSync(sink.path).equals(all)).toBe(true);
    expect(sink.cutNote).toBeUndefined();
  });
});

describe('a session over logs.maxSessionBytes', () => {
  test('many commands one after another: the logs together stay under the cap, later ones say why they hold less', () => {
    const s = store({ maxCommandBytes: 4 * MiB, maxSessionBytes: 10 * MiB });
    const sinks = Array.from({ length: 8 }, () => flood(s, 8 * MiB, [256 * 1024]).sink);
    const total = sinks.reduce((n, k) => n + statSync(k.path).size, 0);
    expect(total).toBeLessThan(10 * MiB + 8 * 1024);
    expect(sinks[0]!.cutNote).toContain('logs.maxCommandBytes');
    expect(sinks[3]!.cutNote).toContain('logs.maxSessionBytes');
    expect(sinks[7]!.cutNote).toMatch(/none of this command's 8388608 bytes/);
  });

  test('commands side by side cannot pass the cap together', () => {
    const s = store({ maxCommandBytes: 8 * MiB, maxSessionBytes: 6 * MiB });
    const open = Array.from({ length: 4 }, () => s.create('side'));
    const chunk = records(0, 65536);
    for (let i = 0; i < 16; i++) for (const sink of open) sink.write(chunk);
    for (const sink of open) sink.end();
    const total = open.reduce((n, k) => n + statSync(k.path).size, 0);
    expect(total).toBeLessThan(6 * MiB + 4 * 1024);
    expect(open.every((k) => k.totalBytes === 16 * chunk.length)).toBe(true);
  });

  test('a log that closes under its budget gives the rest back to the next one', () => {
    const s = store({ maxCommandBytes: 4 * MiB, maxSessionBytes: 5 * MiB });
    flood(s, 1 * MiB, [MiB]);
    const { sink, all } = flood(s, 4 * MiB, [MiB]);
    expect(readFileSync(sink.path).equals(all)).toBe(true);
  });
});

describe('a disk with less than logs.minFreeBytes free', () => {
  test.each([
    ['no per-command cap', {}],
    ['a per-command cap too', { maxCommandBytes: 64 * MiB }],
  ])('%s: the log does not grow, and its note says the free space', (_name, limits) => {
    const dir = tempDir('gcd-logfree-');
    const free = freeBytes(dir);
    expect(free).toBeGreaterThan(0);
    // A floor above what this disk has free: the situation of a nearly full laptop.
    const s = new LogStore(dir, 's', { ...RETENTION, ...limits, minFreeBytes: free! * 2 });
    const { sink } = flood(s, 32 * MiB, [MiB]);
    expect(statSync(sink.path).size).toBeLessThan(1024);
    expect(sink.cutNote).toMatch(/free, under logs\.minFreeBytes/);
    expect(readFileSync(sink.path, 'utf8')).toContain('logs.minFreeBytes');
  });
});
