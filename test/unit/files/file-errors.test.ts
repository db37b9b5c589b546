/**
 * Every failure of a file operation answers with the path asked and a reason from the typed
 * list (FILE_OPERATION_REASONS), or, for a path that leads out, POLICY_VIOLATION with the path.
 * The operations run the real file-op.sh on this machine (the fake engine's exec runs the argv
 * it is given), in a folder that stands for the container's working folder.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { constants, tmpdir } from 'node:os';
import { join } from 'node:path';
import { FILE_OPERATION_REASONS, SandboxError } from '../../../src/errors.js';
import type { ExecSpec } from '../../../src/engine/container-engine.js';
import { ContainerFiles } from '../../../src/files/container-files.js';
import { FakeEngine, type ScriptedExec } from '../../support/fake-engine.js';
import { sandboxError } from '../../support/sandbox-error.js';

let wd: string;
/** What the next exec answers instead of running (a timeout's kill, a broken answer). */
let override: ScriptedExec | undefined;

function runHere(_id: string, spec: ExecSpec): ScriptedExec {
  if (override) return override;
  const [cmd, ...args] = spec.cmd;
  const r = spawnSync(cmd!, args);
  const frames: ScriptedExec['frames'] = [];
  if (r.stdout.length) frames.push(['stdout', r.stdout]);
  if (r.stderr.length) frames.push(['stderr', r.stderr]);
  return { frames, exitCode: r.status ?? 128 + constants.signals[r.signal!] };
}

let files: ContainerFiles;
beforeEach(() => {
  wd = realpathSync(mkdtempSync(join(tmpdir(), 'gcd-file-errors-')));
  writeFileSync(join(wd, 'a.txt'), 'a\nb\n');
  mkdirSync(join(wd, 'sub'));
  symlinkSync('/etc', join(wd, 'out'));
  override = undefined;
  const engine = new FakeEngine({ script: runHere });
  const c = engine.seedContainer({});
  const limits = { maxReadBytes: 1000, maxReadLines: 100, maxWriteBytes: 1000, maxListEntries: 100, maxListDepth: 3 };
  files = new ContainerFiles(engine, c.id, wd, limits);
});
afterEach(() => rmSync(wd, { recursive: true, force: true }));

function expectFileFailure(e: SandboxError, path: string, reason: string): void {
  expect(e.code).toBe('FILE_OPERATION_FAILED');
  expect(e.toJSON()).toMatchObject({ code: 'FILE_OPERATION_FAILED', path, reason });
  expect(FILE_OPERATION_REASONS).toContain(e.data.reason);
}

const KILLED: ScriptedExec = { frames: [], exitCode: 137 };

// Every row has five cells: a test function with more parameters than its row is given `done`.
test.each<[string, () => Promise<unknown>, string, string, ScriptedExec | undefined]>([
  ['read of a missing file', () => files.readFile('missing.txt'), 'missing.txt', 'not found', undefined],
  ['read of a folder', () => files.readFile('sub'), 'sub', 'wrong type', undefined],
  ['read in a missing folder', () => files.readFile('nope/x.txt'), 'nope/x.txt', 'not found', undefined],
  ['read that timed out', () => files.readFile('a.txt'), 'a.txt', 'timed out', KILLED],
  [
    'read with an answer that is not one',
    () => files.readFile('a.txt'),
    'a.txt',
    'failed',
    { frames: [['stdout', Buffer.from('hello\n')]], exitCode: 0 },
  ],
  ['read the script could not start', () => files.readFile('a.txt'), 'a.txt', 'failed', { frames: [], exitCode: 126 }],
  ['bytes of a missing file', () => files.readFileBytes('missing.bin'), 'missing.bin', 'not found', undefined],
  ['bytes of a file over the cap', () => files.readFileBytes('a.txt', { maxBytes: 2 }), 'a.txt', 'too large', undefined],
  ['bytes that timed out', () => files.readFileBytes('a.txt'), 'a.txt', 'timed out', KILLED],
  ['listing of a missing folder', () => files.listDirectory('nope'), 'nope', 'not found', undefined],
  ['listing that timed out', () => files.listDirectory('.'), '.', 'timed out', KILLED],
  ['edit of a missing file', () => files.editFile('missing.txt', 'a', 'b'), 'missing.txt', 'not found', undefined],
])('%s: FILE_OPERATION_FAILED with the path asked and its reason', async (_what, op, path, reason, scripted) => {
  override = scripted;
  expectFileFailure(await sandboxError(op), path, reason);
});

test.each([
  ['read', () => files.readFile('out/hostname'), 'out/hostname'],
  ['listing', () => files.listDirectory('out'), 'out'],
])('a %s through a link out of the working folder: POLICY_VIOLATION with the path', async (_what, op, path) => {
  const e = await sandboxError(op);
  expect(e.toJSON()).toMatchObject({ code: 'POLICY_VIOLATION', rule: 'container path', path });
});

test("a write the engine refuses to extract: FILE_OPERATION_FAILED with the path asked, not the engine's folder", async () => {
  const engine = new FakeEngine({ script: runHere });
  const c = engine.seedContainer({});
  c.paths.set(wd, { type: 'dir', size: 0 });
  engine.fail(
    'extractArchive',
    new SandboxError('FILE_OPERATION_FAILED', 'read-only file system', { data: { path: wd, reason: 'cannot write' } }),
  );
  // The discard after it finds no container: that failure is swallowed, the refusal is the answer.
  engine.fail('exec', new SandboxError('CONTAINER_NOT_FOUND', 'gone', { data: { containerId: c.id } }));
  const limits = { maxReadBytes: 1000, maxReadLines: 100, maxWriteBytes: 1000, maxListEntries: 100, maxListDepth: 3 };
  const writer = new ContainerFiles(engine, c.id, wd, limits, { uid: 0, gid: 0 });
  expectFileFailure(await sandboxError(() => writer.writeFile('new/file.txt', 'x')), 'new/file.txt', 'cannot write');
});
