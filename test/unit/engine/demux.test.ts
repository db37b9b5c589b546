import type { StreamId } from '../../../src/engine/container-engine.js';
import { FrameDemuxer } from '../../../src/engine/demux.js';
import { frame } from '../../support/frames.js';

/** Collects what the demuxer emits: per stream, and the order of (merged) segments. */
function collector() {
  const got: Record<StreamId, Buffer[]> = { stdout: [], stderr: [] };
  const order: Array<[StreamId, string]> = [];
  const demux = new FrameDemuxer((stream, payload) => {
    // Payloads are sub-views of the pushed chunk: copy, as the port requires.
    const copy = Buffer.from(payload);
    got[stream].push(copy);
    const last = order[order.length - 1];
    if (last && last[0] === stream) last[1] += copy.toString('latin1');
    else order.push([stream, copy.toString('latin1')]);
  });
  return {
    demux,
    stdout: () => Buffer.concat(got.stdout),
    stderr: () => Buffer.concat(got.stderr),
    order,
    emitted: () => got.stdout.length + got.stderr.length,
  };
}

const binary = Buffer.from(Array.from({ length: 300 }, (_, i) => (i * 7) % 256));
const frames = [
  frame(1, 'hello '),
  frame(2, 'warn: x\n'),
  frame(1, ''),
  frame(1, binary),
  frame(2, Buffer.alloc(0)),
  frame(2, 'e2'),
  frame(1, 'end\n'),
];
const stream = Buffer.concat(frames);
const expectedStdout = Buffer.concat([Buffer.from('hello '), binary, Buffer.from('end\n')]);
const expectedStderr = Buffer.from('warn: x\ne2');
const expectedOrder: Array<[StreamId, string]> = [
  ['stdout', 'hello '],
  ['stderr', 'warn: x\n'],
  ['stdout', binary.toString('latin1')],
  ['stderr', 'e2'],
  ['stdout', 'end\n'],
];

describe('FrameDemuxer', () => {
  test('many frames in one chunk', () => {
    const c = collector();
    c.demux.push(stream);
    expect(c.stdout().equals(expectedStdout)).toBe(true);
    expect(c.stderr().equals(expectedStderr)).toBe(true);
    expect(c.order).toEqual(expectedOrder);
    expect(c.demux.complete).toBe(true);
  });

  test('one split at every byte offset (headers and payloads cut anywhere) reassembles exactly', () => {
    for (let k = 0; k <= stream.length; k++) {
      const c = collector();
      c.demux.push(stream.subarray(0, k));
      c.demux.push(stream.subarray(k));
      expect({ k, stdout: c.stdout().equals(expectedStdout), stderr: c.stderr().equals(expectedStderr) }).toEqual({
        k,
        stdout: true,
        stderr: true,
      });
      expect(c.order).toEqual(expectedOrder);
      expect(c.demux.complete).toBe(true);
    }
  });

  test('two splits at every pair of offsets inside the first frames', () => {
    const limit = 40; // covers the first three headers and payloads
    for (let a = 0; a <= limit; a++) {
      for (let b = a; b <= limit; b++) {
        const c = collector();
        c.demux.push(stream.subarray(0, a));
        c.demux.push(stream.subarray(a, b));
        c.demux.push(stream.subarray(b));
        expect({ a, b, ok: c.stdout().equals(expectedStdout) && c.stderr().equals(expectedStderr) }).toEqual({ a, b, ok: true });
      }
    }
  });

  test('one byte at a time', () => {
    const c = collector();
    for (let i = 0; i < stream.length; i++) c.demux.push(stream.subarray(i, i + 1));
    expect(c.stdout().equals(expectedStdout)).toBe(true);
    expect(c.stderr().equals(expectedStderr)).toBe(true);
    expect(c.order).toEqual(expectedOrder);
  });

  test('zero-length frames emit nothing and do not disturb the next frame', () => {
    const c = collector();
    c.demux.push(Buffer.concat([frame(1, ''), frame(2, ''), frame(1, ''), frame(2, 'x'), frame(1, '')]));
    expect(c.stdout().length).toBe(0);
    expect(c.stderr().toString()).toBe('x');
    expect(c.emitted()).toBe(1);
    expect(c.demux.complete).toBe(true);
  });

  test('complete is false inside a header or a payload', () => {
    const c = collector();
    const f = frame(1, 'abcdef');
    c.demux.push(f.subarray(0, 5));
    expect(c.demux.complete).toBe(false);
    c.demux.push(f.subarray(5, 10));
    expect(c.demux.complete).toBe(false);
    c.demux.push(f.subarray(10));
    expect(c.demux.complete).toBe(true);
    expect(c.stdout().toString()).toBe('abcdef');
  });

  test('stdin (0) and unknown stream types go to stdout; 2 is stderr', () => {
    const c = collector();
    c.demux.push(Buffer.concat([frame(0, 'in'), frame(3, 'odd'), frame(2, 'err')]));
    expect(c.stdout().toString()).toBe('inodd');
    expect(c.stderr().toString()).toBe('err');
  });
});
