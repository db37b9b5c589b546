/**
 * The mover's protocol against the real script: `file-op.sh serve` run by this machine's
 * `sh` (no engine) through moverCommand, fed requestLine's lines, its output split by
 * AnswerReader. A change to the framing, the greeting, the request line, the staged-name
 * rule or the `new=` line on one side without the other fails here.
 */
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { existsSync, lstatSync, mkdtempSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { exitMeaning, FILE_OP_EXIT, parsePlaced } from '../../../src/files/file-op-protocol.js';
import {
  AnswerReader,
  GREETING_ID,
  isStagedName,
  moverCommand,
  type MoverAnswer,
  parseGreeting,
  requestLine,
  STAGED_PREFIX,
  stagedName,
} from '../../../src/files/mover-protocol.js';

let wd: string;
let mover: ChildProcessWithoutNullStreams;
const answers: Array<[number, MoverAnswer]> = [];
let waiters: Array<() => void> = [];

/** The next answer the mover gives. */
async function next(): Promise<[number, MoverAnswer]> {
  while (answers.length === 0) await new Promise<void>((r) => waiters.push(r));
  return answers.shift()!;
}

function stage(content: string): string {
  const name = stagedName();
  writeFileSync(join(wd, name), content, { mode: 0o600 });
  return name;
}

beforeAll(() => {
  wd = realpathSync(mkdtempSync(join(tmpdir(), 'gcd-mover-')));
  const [cmd, ...args] = moverCommand(wd);
  mover = spawn(cmd!, args);
  const reader = new AnswerReader((id, a) => {
    answers.push([id, a]);
    for (const w of waiters) w();
    waiters = [];
  });
  mover.stdout.on('data', (chunk: Buffer) => reader.push(chunk));
});
afterAll(() => {
  mover.stdin.end();
  rmSync(wd, { recursive: true, force: true });
});

test("the greeting first: id 0, exit 0, the user's numeric ids", async () => {
  const [id, greeting] = await next();
  expect(id).toBe(GREETING_ID);
  expect(greeting.code).toBe(0);
  expect(parseGreeting(greeting.text)).toEqual({ uid: process.getuid!(), gid: process.getgid!() });
});

test('place: the staged copy moved to a path with a space, a newline and non-ASCII in it; new=1, then new=0', async () => {
  const target = join(wd, 'a dir', 'ünï\ncødé.txt');
  const first = stage('hello');
  mover.stdin.write(requestLine({ kind: 'place', id: 1, staged: first, path: target }));
  const [id, a] = await next();
  expect([id, a.code, parsePlaced(a.text)]).toEqual([1, 0, { created: true }]);
  expect(readFileSync(target, 'utf8')).toBe('hello');
  expect(existsSync(join(wd, first))).toBe(false);

  mover.stdin.write(requestLine({ kind: 'place', id: 2, staged: stage('again'), path: target }));
  const [id2, b] = await next();
  expect([id2, b.code, parsePlaced(b.text)]).toEqual([2, 0, { created: false }]);
  expect(readFileSync(target, 'utf8')).toBe('again');
});

test('place through a link out of the working folder: exit 3, and the staged copy is gone', async () => {
  symlinkSync('/tmp', join(wd, 'out'));
  const staged = stage('x');
  mover.stdin.write(requestLine({ kind: 'place', id: 3, staged, path: join(wd, 'out', 'escaped.txt') }));
  const [id, a] = await next();
  expect([id, a.code, exitMeaning(a.code)]).toEqual([3, FILE_OP_EXIT.outside, 'outside']);
  expect(a.text).toMatch(/outside the working folder/);
  expect(existsSync(join(wd, staged))).toBe(false);
});

test('place onto a folder: exit 5, wrong type', async () => {
  mover.stdin.write(requestLine({ kind: 'place', id: 4, staged: stage('x'), path: join(wd, 'a dir') }));
  const [id, a] = await next();
  expect([id, a.code, exitMeaning(a.code)]).toEqual([4, FILE_OP_EXIT.wrongType, 'wrong type']);
});

test('discard: the staged copy removed, exit 0, no text', async () => {
  const staged = stage('x');
  mover.stdin.write(requestLine({ kind: 'discard', id: 5, staged }));
  expect(await next()).toEqual([5, { code: 0, text: '' }]);
  expect(() => lstatSync(join(wd, staged))).toThrow();
});

test.each(['../etc/passwd', '.gcd-write-', '.gcd-write-XYZ', 'other-name', '.gcd-write-ab/../x'])(
  'a staged name that is not one of ours (%j): refused as a request it cannot read, answered as id 0 with exit 2',
  async (staged) => {
    expect(isStagedName(staged)).toBe(false);
    mover.stdin.write(requestLine({ kind: 'discard', id: 6, staged }));
    const [id, a] = await next();
    expect([id, a.code, exitMeaning(a.code)]).toEqual([GREETING_ID, FILE_OP_EXIT.badRequest, 'failed']);
  },
);

test('the names stagedName makes are ones the mover accepts', () => {
  for (let i = 0; i < 20; i++) {
    const name = stagedName();
    expect(name.startsWith(STAGED_PREFIX)).toBe(true);
    expect(isStagedName(name)).toBe(true);
  }
});

test('parseGreeting: two numbers, nothing else', () => {
  for (const bad of ['', '0', 'uid=0 gid=0', '0 0 0', '1 x', `${'9'.repeat(11)} 1`]) expect(parseGreeting(bad)).toBeUndefined();
});
