import { extract } from 'tar-stream';
import { isText, lineRange, occurrences, resolveContainerPath, singleFileTar } from '../../../src/files/container-files.js';
import { parsePathStat } from '../../../src/engine/docker-engine.js';
import { SandboxError } from '../../../src/errors.js';

function code(fn: () => unknown): string {
  try {
    fn();
  } catch (e) {
    return e instanceof SandboxError ? e.code : String(e);
  }
  return 'none';
}

describe('resolveContainerPath: relative paths from the working folder, nothing outside it', () => {
  test.each([
    ['app.py', '/workspace/app.py'],
    ['./src//app.py', '/workspace/src/app.py'],
    ['src/../app.py', '/workspace/app.py'],
    ['.', '/workspace'],
    ['src/', '/workspace/src'],
    ['/workspace', '/workspace'],
    ['/workspace/a/b.txt', '/workspace/a/b.txt'],
    ['/workspace/a/../b.txt', '/workspace/b.txt'],
    ['dir with space/it\'s "q"\nü.txt', '/workspace/dir with space/it\'s "q"\nü.txt'],
  ])('%j is %j', (path, full) => {
    expect(resolveContainerPath('/workspace', path)).toBe(full);
  });

  test.each(['../etc/passwd', 'a/../../etc', '/etc/passwd', '/', '/workspace2/x', '/workspace/../etc', '..', '/tmp'])(
    '%j is refused with POLICY_VIOLATION',
    (path) => {
      expect(code(() => resolveContainerPath('/workspace', path))).toBe('POLICY_VIOLATION');
    },
  );

  test.each(['', '   ', 'a\0b'])('%j is INVALID_ARGUMENT', (path) => {
    expect(code(() => resolveContainerPath('/workspace', path))).toBe('INVALID_ARGUMENT');
  });

  test('a working folder given with a trailing slash or as /', () => {
    expect(resolveContainerPath('/workspace/', 'x')).toBe('/workspace/x');
    expect(resolveContainerPath('/', 'etc/x')).toBe('/etc/x');
  });
});

describe('lineRange: the lines a read returns', () => {
  test('defaults to the first lines, within the line cap', () => {
    expect(lineRange(undefined, undefined, 100)).toEqual({ first: 1, last: 100 });
    expect(lineRange(50, undefined, 100)).toEqual({ first: 50, last: 149 });
  });
  test('a range wider than the cap is cut to it', () => {
    expect(lineRange(10, 5000, 100)).toEqual({ first: 10, last: 109 });
    expect(lineRange(10, 20, 100)).toEqual({ first: 10, last: 20 });
  });
  test('an end before the start is INVALID_ARGUMENT', () => {
    expect(code(() => lineRange(20, 10, 100))).toBe('INVALID_ARGUMENT');
  });
  test.each([
    [Number.NaN, undefined, 100],
    [0, undefined, 100],
    [-3, undefined, 100],
    [1.5, undefined, 100],
    [1, Number.NaN, 100],
    [1, 1e21, 100],
    [1, undefined, 0],
  ])('startLine %p, endLine %p, maxLines %p: INVALID_ARGUMENT, never a broken range', (s, e, m) => {
    expect(code(() => lineRange(s, e, m))).toBe('INVALID_ARGUMENT');
  });
});

describe('isText: what a model may be shown', () => {
  test('UTF-8 text is text; NUL bytes or invalid UTF-8 are binary', () => {
    expect(isText(Buffer.from('héllo 😀\n'))).toBe(true);
    expect(isText(Buffer.from([0x61, 0x00, 0x62]))).toBe(false);
    expect(isText(Buffer.from([0x61, 0xff, 0xfe]))).toBe(false);
    expect(isText(Buffer.alloc(0))).toBe(true);
  });
});

describe('occurrences: what a single-occurrence edit counts', () => {
  test.each([
    ['a b a', 'a', 2],
    ['x = 1\nx = 1\n', 'x = 1', 2],
    ['aaa', 'aa', 2],
    ['abc', 'd', 0],
    ['abc', '', 0],
    ['line one\nline two', 'line two', 1],
  ])('%j has %j %d times', (text, needle, n) => {
    expect(occurrences(text, needle)).toBe(n);
  });
});

describe('singleFileTar: the archive a write sends the engine', () => {
  async function entries(parts: AsyncIterable<Buffer>): Promise<Array<{ header: Record<string, unknown>; body: Buffer }>> {
    const chunks: Buffer[] = [];
    for await (const part of parts) chunks.push(part);
    const archive = Buffer.concat(chunks);
    const ex = extract();
    const out: Array<{ header: Record<string, unknown>; body: Buffer }> = [];
    const done = (async () => {
      for await (const entry of ex) {
        const chunks: Buffer[] = [];
        for await (const c of entry) chunks.push(c as Buffer);
        out.push({ header: { ...entry.header }, body: Buffer.concat(chunks) });
      }
    })();
    ex.end(archive);
    await done;
    return out;
  }

  test('one regular file: its exact bytes, the owner and mode asked, the time to the sub-second', async () => {
    const bytes = Buffer.from([0, 1, 2, 255, 10, 13]);
    const before = Date.now();
    const [e, ...rest] = await entries(singleFileTar('.gcd-write-abc', bytes, { mode: 0o644, uid: 1000, gid: 1001 }));
    expect(rest).toHaveLength(0);
    expect(e!.body.equals(bytes)).toBe(true);
    expect(e!.header).toMatchObject({ name: '.gcd-write-abc', type: 'file', mode: 0o644, uid: 1000, gid: 1001, size: 6 });
    const pax = e!.header.pax as Record<string, string>;
    expect(pax.mtime).toMatch(/^\d{10}\.\d{9}$/);
    expect(Math.abs(Number(pax.mtime) * 1000 - before)).toBeLessThan(5_000);
  });

  test('an empty file, and a 3 MB one, round-trip', async () => {
    for (const bytes of [Buffer.alloc(0), Buffer.alloc(3 * 1024 * 1024, 7)]) {
      const [e] = await entries(singleFileTar('f', bytes, { mode: 0o600, uid: 0, gid: 0 }));
      expect(e!.body.equals(bytes)).toBe(true);
    }
  });
});

describe('parsePathStat: what the engine says of a path, read defensively', () => {
  const header = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64');
  test.each([
    ['a folder', { name: 'workspace', size: 4096, mode: 2 ** 31 + 0o755 }, { type: 'dir', size: 4096 }],
    ['a file', { name: 'a', size: 3, mode: 0o644 }, { type: 'file', size: 3 }],
    ['a link', { name: 'w', size: 4, mode: 2 ** 27 + 0o777, linkTarget: '/etc' }, { type: 'link', size: 4, linkTarget: '/etc' }],
    ['a pipe', { name: 'p', size: 0, mode: 2 ** 25 + 0o644 }, { type: 'other', size: 0 }],
    ['a sticky folder', { name: 't', size: 0, mode: 2 ** 31 + 2 ** 20 + 0o777 }, { type: 'dir', size: 0 }],
  ])('%s', (_what, stat, expected) => {
    expect(parsePathStat(header(stat))).toEqual(expected);
  });

  test.each([
    ['no header', undefined],
    ['not base64 JSON', 'not json at all'],
    ['JSON that is not an object', header('dir')],
    ['no mode', header({ name: 'x', size: 1 })],
    ['a mode that is not a number', header({ mode: '2147484141' })],
    ['a negative mode', header({ mode: -1 })],
    ['a mode past 32 bits', header({ mode: 2 ** 33 })],
  ])('%s: unreadable, not a guess', (_what, h) => {
    expect(parsePathStat(h)).toBeUndefined();
  });
});
