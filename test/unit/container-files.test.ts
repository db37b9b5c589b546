import { isText, lineRange, occurrences, resolveContainerPath } from '../../src/sandbox/container-files.js';
import { SandboxError } from '../../src/errors.js';

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
