/**
 * The kept shell's answers when its exec ends under a command, on a scripted exec (the real
 * shell runs in test/integration/commands/kept-shell.test.ts). A command whose frame never
 * ended has no exit code of its own: a broken connection is that error, as a plain exec's
 * would be, and a shell that exited is no exit code at all.
 */
import { PassThrough } from 'node:stream';
import { KeptShell } from '../../../src/commands/kept-shell.js';
import { ExecMarks } from '../../../src/commands/exec-marks.js';
import { SandboxError } from '../../../src/errors.js';
import type { ContainerEngine, ExecSession, ExecSpec, StreamId } from '../../../src/engine/container-engine.js';

interface ShellExec {
  spec: ExecSpec;
  onOutput: (stream: StreamId, chunk: Buffer) => void;
  end: (r: { exitCode: number | null }) => void;
  fail: (e: unknown) => void;
  /** Resolves with the nonce of the first request the shell was sent. */
  request: Promise<string>;
}

function scriptedEngine() {
  const shells: ShellExec[] = [];
  const engine = {
    async exec(_id: string, spec: ExecSpec, onOutput: (stream: StreamId, chunk: Buffer) => void): Promise<ExecSession> {
      let end!: ShellExec['end'];
      let fail!: ShellExec['fail'];
      const done = new Promise<{ exitCode: number | null }>((resolve, reject) => {
        end = resolve;
        fail = reject;
      });
      const input = spec.stdin as PassThrough;
      const request = new Promise<string>((resolve) => input.once('data', (c: Buffer) => resolve(c.toString('utf8').split(' ')[0]!)));
      shells.push({ spec, onOutput, end, fail, request });
      return { done, detach: () => undefined };
    },
  } as unknown as ContainerEngine;
  return { engine, shells };
}

function keptShell(engine: ContainerEngine) {
  const killed: string[] = [];
  const shell = new KeptShell({
    engine,
    containerId: 'c1',
    workdir: '/workspace',
    killMarked: async (m) => killed.push(m),
    newMark: () => new ExecMarks().next(),
  });
  return { shell, killed };
}

async function begun(s: ShellExec): Promise<void> {
  const nonce = await s.request;
  s.onOutput('stdout', Buffer.from(`\x1f${nonce}b\x1fbefore\n`));
  s.onOutput('stderr', Buffer.from(`\x1f${nonce}b\x1f`));
}

test('the connection breaks under a command: its answer is the engine error, and the next command gets a new shell', async () => {
  const { engine, shells } = scriptedEngine();
  const { shell } = keptShell(engine);
  const out: string[] = [];
  const run = await shell.run('echo before; sleep 20', (_s, b) => out.push(b.toString()));
  await begun(shells[0]!);
  const lost = new SandboxError('ENGINE_UNAVAILABLE', 'No container engine answers (ECONNREFUSED).');
  shells[0]!.fail(lost);
  await expect(run.session.done).rejects.toBe(lost);
  expect(out.join('')).toBe('before\n');
  expect(run.outcome().note).toMatch(
    /^the shell lost its connection \(No container engine answers \(ECONNREFUSED\)\.\) during this command/,
  );

  const next = await shell.run('true', () => undefined);
  expect(shells).toHaveLength(2);
  const nonce = await shells[1]!.request;
  shells[1]!.onOutput('stderr', Buffer.from(`\x1f${nonce}b\x1f\x1f${nonce}e\x1f`));
  shells[1]!.onOutput('stdout', Buffer.from(`\x1f${nonce}b\x1f\x1f${nonce}e\x1f0:1:/workspace\0`));
  await expect(next.session.done).resolves.toEqual({ exitCode: 0 });
  expect(next.outcome().note).toMatch(/a new shell started \(the last one lost its connection/);
});

test('the shell exits under a command: the command has no exit code (not the shell’s)', async () => {
  for (const shellExit of [0, 1, 137, null]) {
    const { engine, shells } = scriptedEngine();
    const { shell } = keptShell(engine);
    const run = await shell.run('kill -9 $PPID', () => undefined);
    await begun(shells[0]!);
    shells[0]!.end({ exitCode: shellExit });
    await expect(run.session.done).resolves.toEqual({ exitCode: null });
    expect(run.outcome().note).toMatch(new RegExp(`^the shell ended \\(exit ${shellExit ?? 'unknown'}\\) during this command`));
  }
});
