/**
 * The file operations' protocol against the real script: scripts/container/file-op.sh run by
 * this machine's `sh` (no engine), through the very argv fileOpCommand builds, and what it
 * prints read by the parsers of file-op-protocol.ts. A change to one side without the other
 * fails here.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { constants, tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  exitMeaning,
  FILE_OP_EXIT,
  type FileOpArgs,
  fileOpArgs,
  fileOpCommand,
  LIST_OUTPUT_MAX_BYTES,
  parseListOutput,
  parsePlaced,
  parseReadOutput,
  READ_HEADER_MAX_BYTES,
  totalLines,
} from '../../../src/files/file-op-protocol.js';

let wd: string;
beforeAll(() => {
  wd = realpathSync(mkdtempSync(join(tmpdir(), 'gcd-file-op-')));
  writeFileSync(join(wd, 'a.txt'), 'one\ntwo\nthree');
  writeFileSync(join(wd, 'b.txt'), 'x\n');
  writeFileSync(join(wd, 'empty'), '');
  writeFileSync(join(wd, 'bin'), Buffer.from([1, 0, 2, 0, 10]));
  writeFileSync(join(wd, 'new\nline name'), 'n');
  mkdirSync(join(wd, 'sub'));
  writeFileSync(join(wd, 'sub', 'inner.txt'), '12345');
  symlinkSync('/etc', join(wd, 'out'));
});
afterAll(() => rmSync(wd, { recursive: true, force: true }));

function run(args: FileOpArgs): { status: number | null; stdout: Buffer; stderr: string } {
  const [cmd, ...rest] = fileOpCommand(args);
  const r = spawnSync(cmd!, rest);
  return { status: r.status, stdout: r.stdout, stderr: r.stderr.toString('utf8') };
}

describe('read: a header line, then the lines asked', () => {
  test('a file whose last line has no newline', () => {
    const r = run(fileOpArgs.read(wd, join(wd, 'a.txt'), 2, 3, 100));
    expect(r.status).toBe(0);
    const out = parseReadOutput(r.stdout)!;
    expect(out.header).toEqual({ size: 13, newlines: 2, endsWithNewline: false, nulBytes: 0, partial: false });
    expect(totalLines(out.header)).toBe(3);
    // sed may end the last line with a newline the file lacks: the header's endsWithNewline says it does not.
    expect(out.body.toString().replace(/\n$/, '')).toBe('two\nthree');
  });

  test('the byte cap is the script’s: at most maxBytes of lines after the header', () => {
    const out = parseReadOutput(run(fileOpArgs.read(wd, join(wd, 'a.txt'), 1, 3, 5)).stdout)!;
    expect(out.body.toString()).toBe('one\nt');
  });

  test('an empty file, and one ending with a newline', () => {
    expect(parseReadOutput(run(fileOpArgs.read(wd, join(wd, 'empty'), 1, 10, 100)).stdout)).toEqual({
      header: { size: 0, newlines: 0, endsWithNewline: false, nulBytes: 0, partial: false },
      body: Buffer.alloc(0),
    });
    const b = parseReadOutput(run(fileOpArgs.read(wd, 'b.txt', 1, 10, 100)).stdout)!;
    expect([b.header.endsWithNewline, totalLines(b.header), b.body.toString()]).toEqual([true, 1, 'x\n']);
  });

  test('a binary file: its NUL bytes counted, no line sent', () => {
    const out = parseReadOutput(run(fileOpArgs.read(wd, join(wd, 'bin'), 1, 10, 100)).stdout)!;
    expect(out.header).toMatchObject({ size: 5, nulBytes: 2 });
    expect(out.body.length).toBe(0);
  });

  test('output that is not a header is no header: another line, none, or one longer than the cap', () => {
    for (const bad of [
      '',
      'size=1 lines=1',
      'hello\n',
      'size=1 lines=1 lastnl=1 nul=0 partial=0 extra\n',
      `${'9'.repeat(READ_HEADER_MAX_BYTES)}\n`,
    ])
      expect(parseReadOutput(Buffer.from(bad))).toBeUndefined();
    expect(parseReadOutput(Buffer.from(`size=1 lines=0 lastnl=0 nul=0 partial=0${' '.repeat(READ_HEADER_MAX_BYTES)}\n`))).toBeUndefined();
  });
});

describe('exit codes: what each failure of the script means', () => {
  test.each<[string, FileOpArgs, number, ReturnType<typeof exitMeaning>]>([
    ['a missing file', ['read', '', 'missing.txt', '1', '1', '10'], FILE_OP_EXIT.notFound, 'not found'],
    ['a missing folder', ['list', '', 'nope', '1'], FILE_OP_EXIT.notFound, 'not found'],
    ['a folder read as a file', ['read', '', 'sub', '1', '1', '10'], FILE_OP_EXIT.wrongType, 'wrong type'],
    ['a file larger than the cap', ['get', '', 'a.txt', '4'], FILE_OP_EXIT.tooLarge, 'too large'],
    ['a link out of the working folder', ['read', '', 'out/hostname', '1', '1', '10'], FILE_OP_EXIT.outside, 'outside'],
    ['a listing through a link out', ['list', '', 'out', '1'], FILE_OP_EXIT.outside, 'outside'],
  ])('%s', (_what, args, code, meaning) => {
    const r = run([args[0], wd, ...args.slice(2)] as FileOpArgs);
    expect(r.status).toBe(code);
    expect(r.stderr).not.toBe('');
    expect(exitMeaning(r.status)).toBe(meaning);
  });

  test('an operation it does not know: 2, a failure', () => {
    const [cmd, ...rest] = fileOpCommand(['nope', wd, 'a.txt'] as unknown as FileOpArgs);
    const r = spawnSync(cmd!, rest);
    expect(r.status).toBe(FILE_OP_EXIT.badRequest);
    expect(exitMeaning(r.status)).toBe('failed');
  });

  test('killed by its timeout (SIGKILL, 128 + 9): timed out', () => {
    // `timeout -s KILL` kills its own process group, itself too: the engine reports 128 + 9.
    const r = spawnSync('timeout', ['-s', 'KILL', '0.2', 'sleep', '5']);
    const exitCode = r.status ?? 128 + constants.signals[r.signal!];
    expect(exitCode).toBe(FILE_OP_EXIT.killedByTimeout);
    expect(exitMeaning(exitCode)).toBe('timed out');
    expect(exitMeaning(null)).toBe('failed');
  });
});

describe('get: the exact bytes', () => {
  test('within the cap', () => {
    const r = run(fileOpArgs.get(wd, join(wd, 'bin'), 5));
    expect([r.status, [...r.stdout]]).toEqual([0, [1, 0, 2, 0, 10]]);
  });
});

describe('list: a record per entry', () => {
  test('types, file sizes, names with a newline; deeper with depth', () => {
    const one = parseListOutput(run(fileOpArgs.list(wd, wd, 1)).stdout);
    expect(one.complete).toBe(true);
    const byPath = Object.fromEntries(one.entries.map((e) => [e.path, e]));
    expect(byPath).toEqual({
      'a.txt': { path: 'a.txt', type: 'file', size: 13 },
      'b.txt': { path: 'b.txt', type: 'file', size: 2 },
      empty: { path: 'empty', type: 'file', size: 0 },
      bin: { path: 'bin', type: 'file', size: 5 },
      'new\nline name': { path: 'new\nline name', type: 'file', size: 1 },
      sub: { path: 'sub', type: 'dir' },
      out: { path: 'out', type: 'link' },
    });
    const two = parseListOutput(run(fileOpArgs.list(wd, join(wd, 'sub'), 2)).stdout);
    expect(two.entries).toEqual([{ path: 'inner.txt', type: 'file', size: 5 }]);
  });

  test('output cut at the cap: the record cut short is dropped, and the listing says it is not whole', () => {
    const record = Buffer.from(`file 1 ${'n'.repeat(90)}\0`);
    const whole = Math.floor(LIST_OUTPUT_MAX_BYTES / record.length);
    const cut = Buffer.concat([...Array<Buffer>(whole + 1).fill(record)]).subarray(0, LIST_OUTPUT_MAX_BYTES);
    const out = parseListOutput(cut);
    expect(out.complete).toBe(false);
    expect(out.entries).toHaveLength(whole);
    // Bytes past the cap are never read.
    expect(parseListOutput(Buffer.concat([cut, Buffer.from('file 1 past\0')])).entries).toHaveLength(whole);
  });

  test('records that are not records are skipped', () => {
    expect(parseListOutput(Buffer.from('file 1 a\0junk\0dir 0 \0file x b\0link 0 c\0')).entries).toEqual([
      { path: 'a', type: 'file', size: 1 },
      { path: 'c', type: 'link' },
    ]);
  });
});

describe('parsePlaced: the line a placed write prints', () => {
  test.each([
    ['new=1', { created: true }],
    ['new=0\n', { created: false }],
    ['a warning\nnew=1', { created: true }],
    ['new=2', undefined],
    ['', undefined],
  ])('%j', (text, expected) => expect(parsePlaced(text)).toEqual(expected));
});
