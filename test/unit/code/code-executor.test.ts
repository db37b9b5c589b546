import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CODE_IMAGE, type ConfigInput } from '../../../src/config/config-schema.js';
import { loadConfig } from '../../../src/config/load-config.js';
import { buildCodeAnswer } from '../../../src/code/code-answer.js';
import { CodeExecutor, type CodeRun } from '../../../src/code/code-executor.js';
import type { ExecSpec } from '../../../src/engine/container-engine.js';
import { SandboxManager } from '../../../src/sandbox/sandbox-manager.js';
import type { ExecResult } from '../../../src/commands/exec-types.js';
import { FakeEngine, type FakeEngineOptions } from '../../support/fake-engine.js';
import { execResultOf, removeTempDirs, sandboxError, tempDir, testConfig } from '../helpers.js';

const managers: SandboxManager[] = [];
afterEach(async () => {
  for (const m of managers.splice(0)) await m[Symbol.asyncDispose]();
  removeTempDirs();
});

/** An executor on a fake engine, with a clock the test moves. */
function setup(codeExecute: NonNullable<ConfigInput['codeExecute']> = {}, extra: ConfigInput = {}, engineOptions: FakeEngineOptions = {}) {
  const config = testConfig({ ...extra, codeExecute });
  const engine = new FakeEngine({
    ...engineOptions,
    images: [CODE_IMAGE],
    script: () => ({ frames: [['stdout', Buffer.from('42\n')]], exitCode: 0 }),
  });
  const manager = new SandboxManager({ config, engine, sweepOnStart: false });
  managers.push(manager);
  let now = 1_000_000;
  const executor = new CodeExecutor({ manager, now: () => now });
  return { config, engine, manager, executor, advance: (ms: number) => (now += ms) };
}

const commandExecs = (engine: FakeEngine): ExecSpec[] => engine.execsOf('command').map((e) => e.spec);

describe('CodeExecutor: keep-alive and one-shot', () => {
  test('keep-alive reuses one container; the code travels on stdin, never on the command line', async () => {
    const { engine, executor } = setup();
    const code = `print("it's \\"quoted\\" $HOME \`x\` <<EOF ä")\n${'#'.repeat(100_000)}\n`;
    const first = await executor.execute({ language: 'python', code });
    const second = await executor.execute({ language: 'bash', code: 'echo hi' });
    expect(engine.callsOf('createContainer')).toHaveLength(1);
    expect([first.container, second.container]).toEqual(['new', 'reused']);
    expect(first.stateLost).toBeUndefined();
    const [py, sh] = commandExecs(engine);
    expect(py!.stdin!.toString('utf8')).toBe(code);
    expect(sh!.stdin!.toString('utf8')).toBe('echo hi');
    for (const spec of [py!, sh!]) expect(spec.cmd.join('\n')).not.toContain('quoted');
    expect(sh!.cmd.join(' ')).not.toContain('echo hi');
  });

  test('one-shot starts a fresh container per call and removes it at the end', async () => {
    const { engine, executor } = setup({ keepAlive: false });
    const runs = [
      await executor.execute({ language: 'python', code: 'print(1)' }),
      await executor.execute({ language: 'python', code: 'print(2)' }),
    ];
    expect(runs.map((r) => [r.mode, r.container])).toEqual([
      ['one-shot', 'new'],
      ['one-shot', 'new'],
    ]);
    expect(engine.callsOf('createContainer')).toHaveLength(2);
    expect(engine.containers.size).toBe(0);
    // Its dead-man switch is the call's limit plus a minute, not the session's two hours.
    expect(engine.callsOf('createContainer')[0]![0].cmd).toEqual(['90']);
  });

  test('recreated after maxExecutions calls, and the call is told its state is gone', async () => {
    const { engine, executor } = setup({ maxExecutions: 2 });
    const runs = [];
    for (let i = 0; i < 5; i++) runs.push(await executor.execute({ language: 'python', code: `print(${i})` }));
    expect(runs.map((r) => r.container)).toEqual(['new', 'reused', 'new', 'reused', 'new']);
    expect(runs[2]!.stateLost).toMatch(/2 calls \(codeExecute\.maxExecutions\)/);
    expect(engine.callsOf('createContainer')).toHaveLength(3);
    expect(engine.containers.size).toBe(1); // the replaced ones are removed
  });

  test('recreated after idleTimeoutMinutes without a call', async () => {
    const { engine, executor, advance } = setup({ idleTimeoutMinutes: 10 });
    await executor.execute({ language: 'python', code: 'print(1)' });
    advance(9 * 60_000);
    expect((await executor.execute({ language: 'python', code: 'print(2)' })).container).toBe('reused');
    advance(10 * 60_000 + 1);
    const late = await executor.execute({ language: 'python', code: 'print(3)' });
    expect(late.container).toBe('new');
    expect(late.stateLost).toMatch(/idle for more than 10 min/);
    expect(engine.callsOf('createContainer')).toHaveLength(2);
  });

  test('a container removed from outside is found before reuse: a new one runs the call and says so', async () => {
    const { engine, executor } = setup();
    const first = await executor.execute({ language: 'python', code: 'print(1)' });
    const id = [...engine.containers.keys()][0]!;
    engine.containers.delete(id); // `docker rm -f` by someone else
    const next = await executor.execute({ language: 'python', code: 'print(2)' });
    expect(next.container).toBe('new');
    expect(next.containerName).not.toBe(first.containerName);
    expect(next.stateLost).toMatch(/gone/);
  });

  test('shutdown stops the kept-alive container; the executor starts a new one if used again', async () => {
    const { engine, executor } = setup();
    await executor.execute({ language: 'python', code: 'print(1)' });
    expect(engine.containers.size).toBe(1);
    await executor.shutdown();
    expect(engine.containers.size).toBe(0);
    expect((await executor.execute({ language: 'python', code: 'print(2)' })).container).toBe('new');
  });

  test('the user is asked before a container starts, not before a reuse; a no starts nothing', async () => {
    const { engine, executor } = setup();
    const questions: string[] = [];
    const no = await sandboxError(() =>
      executor.execute({ language: 'python', code: 'print(1)', approveStart: async (q) => (questions.push(q), false) }),
    );
    expect(no.code).toBe('USER_DECLINED');
    expect(engine.callsOf('createContainer')).toHaveLength(0);
    const yes = async (q: string) => (questions.push(q), true);
    await executor.execute({ language: 'python', code: 'print(1)', approveStart: yes });
    await executor.execute({ language: 'python', code: 'print(2)', approveStart: yes });
    expect(questions).toHaveLength(2);
    expect(questions[1]).toMatch(/256 MiB, 1 CPU, network none, read-only root; kept for up to 50 calls or 10 min idle/);
  });

  test('where the operator accepted unenforced limits (a rootless engine on cgroups v1), the question says so', async () => {
    const { executor } = setup({}, { engine: { rootlessWithoutLimits: true } });
    const questions: string[] = [];
    await executor.execute({ language: 'python', code: 'print(1)', approveStart: async (q) => (questions.push(q), true) });
    expect(questions[0]).toMatch(
      /256 MiB, 1 CPU \(not enforced where the engine is rootless on cgroups v1: engine\.rootlessWithoutLimits\), network none/,
    );
  });

  test.each([
    [{ language: 'ruby', code: 'puts 1' }, /language must be one of python, bash/],
    [{ language: 'python', code: '   \n' }, /code is empty/],
    [{ language: 'python', code: 'print("a")\n\0print("b")' }, /NUL byte/],
    [{ language: 'python', code: 'x'.repeat(2048) }, /at most 1024 \(codeExecute\.maxCodeBytes\)/],
    [{ language: 'python', code: 'print(1)', timeoutSeconds: 0 }, /from 1 to 60/],
    [{ language: 'python', code: 'print(1)', timeoutSeconds: 61 }, /from 1 to 60/],
    [{ language: 'python', code: 'print(1)', timeoutSeconds: 1.5 }, /whole number/],
  ])('bad input %o is INVALID_ARGUMENT before any engine call', async (request, message) => {
    const { engine, executor } = setup({ maxCodeBytes: 1024, maxTimeoutSeconds: 60 });
    const e = await sandboxError(() => executor.execute(request as Parameters<CodeExecutor['execute']>[0]));
    expect(e.code).toBe('INVALID_ARGUMENT');
    expect(e.message).toMatch(message);
    expect(engine.calls).toEqual([]);
  });
});

describe('CodeExecutor: the sandbox profile and its hard bans', () => {
  test('256 MiB, 1 CPU, read-only root, tmpfs /tmp of 64 MiB, no network, the minimal capabilities', async () => {
    const { engine, executor } = setup();
    await executor.execute({ language: 'python', code: 'print(1)' });
    const spec = engine.callsOf('createContainer')[0]![0];
    expect(spec).toMatchObject({
      image: CODE_IMAGE,
      memoryBytes: 256 * 1024 ** 2,
      nanoCpus: 1e9,
      network: 'none',
      readOnlyRoot: true,
      pidsLimit: 128,
    });
    expect(spec.tmpfs).toContainEqual({ path: '/tmp', sizeBytes: 64 * 1024 ** 2 });
    expect(Object.keys(spec)).not.toEqual(expect.arrayContaining(['privileged']));
    expect(JSON.stringify(spec)).not.toMatch(/privileged|docker\.sock|"host"|PidMode/i);
  });

  test('the minimal capabilities even when the configuration adds some for command containers', async () => {
    const { engine, executor } = setup({}, { capAdd: ['NET_RAW', 'MKNOD', 'SYS_CHROOT'] });
    await executor.execute({ language: 'python', code: 'print(1)' });
    expect(engine.callsOf('createContainer')[0]![0].capAdd).toEqual([
      'CHOWN',
      'DAC_OVERRIDE',
      'FOWNER',
      'FSETID',
      'KILL',
      'SETGID',
      'SETUID',
    ]);
  });

  test.each(['/', '//', '/etc', '/usr/local/bin', '/proc/1', '/sys/fs/cgroup', '/dev', '/lib64', '/run', '/var/run/x'])(
    'a working folder over system files (%s) is INVALID_CONFIG: a tmpfs would hide them',
    (workdir) => {
      let message = '';
      try {
        testConfig({ workdir });
      } catch (e) {
        message = `${(e as { code?: string }).code}: ${(e as Error).message}`;
      }
      expect(message).toMatch(/^INVALID_CONFIG.*workdir/);
    },
  );

  test('a default time limit above the most a call may ask for is INVALID_CONFIG', () => {
    expect(() => testConfig({ codeExecute: { maxTimeoutSeconds: 10 } })).toThrow(/timeoutSeconds/);
    expect(testConfig({ codeExecute: { maxTimeoutSeconds: 10, timeoutSeconds: 10 } }).codeExecute.timeoutSeconds).toBe(10);
  });

  test('read-only root even when the general config says otherwise', async () => {
    const { engine, executor } = setup({}, { readOnlyRoot: false });
    await executor.execute({ language: 'python', code: 'print(1)' });
    expect(engine.callsOf('createContainer')[0]![0].readOnlyRoot).toBe(true);
  });

  test.each([
    [{ codeExecute: { privileged: true } }, /privileged/],
    [{ codeExecute: { network: 'host' } }, /network/],
    [{ codeExecute: { pid: 'host' } }, /pid/],
    [{ codeExecute: { readOnlyRoot: false } }, /readOnlyRoot/],
    [{ codeExecute: { memory: '1k' } }, /memory/],
  ])('no configuration lifts a ban: %o is INVALID_CONFIG', (input, field) => {
    let message = '';
    try {
      testConfig(input as ConfigInput);
    } catch (e) {
      message = `${(e as { code?: string }).code}: ${(e as Error).message}`;
    }
    expect(message).toMatch(/^INVALID_CONFIG/);
    expect(message).toMatch(field);
  });

  test("the engine's socket is never mounted, even from an allowed folder", async () => {
    const dir = tempDir();
    const sock = join(dir, 'docker.sock');
    writeFileSync(sock, '');
    const { executor, engine } = setup(
      { mounts: [{ hostPath: sock, containerPath: '/var/run/docker.sock' }] },
      { mountAllow: [{ hostPath: dir }] },
      { connection: { kind: 'socket', socketPath: sock, endpoint: `unix://${sock}` } },
    );
    const e = await sandboxError(() => executor.execute({ language: 'python', code: 'print(1)' }));
    expect(e.code).toBe('POLICY_VIOLATION');
    expect(engine.callsOf('createContainer')).toHaveLength(0);
  });

  test('a mount outside mountAllow is refused; a project file may not choose the mounts', async () => {
    const { executor } = setup({ mounts: [{ hostPath: tempDir(), containerPath: '/skills' }] });
    expect((await sandboxError(() => executor.execute({ language: 'python', code: 'print(1)' }))).code).toBe('POLICY_VIOLATION');
    const project = tempDir();
    writeFileSync(
      join(project, '.genaicode-docker.json'),
      JSON.stringify({ codeExecute: { mounts: [{ hostPath: '/', containerPath: '/host' }] } }),
    );
    let err: unknown;
    try {
      loadConfig({ cwd: project, env: {} });
    } catch (e) {
      err = e;
    }
    expect(String((err as Error).message)).toMatch(/codeExecute\.mounts/);
  });
});

/** A CodeRun around an ExecResult as the sandbox makes it. */
function run(result: Partial<ExecResult>, extra: Partial<CodeRun> = {}): CodeRun {
  return {
    result: execResultOf({ command: 'python3 -', logPath: join(tempDir(), '0001-python.log'), ...result }),
    language: 'python',
    mode: 'keep-alive',
    container: 'reused',
    containerName: 'gcd-1',
    ...extra,
  };
}

describe('buildCodeAnswer: the output as the model gets it', () => {
  test('stdout, stderr apart, the exit code; nothing that says nothing', async () => {
    const a = await buildCodeAnswer(run({ stdout: 'ok\n', stderr: 'careful\n', exitCode: 2 }), { maxOutputChars: 10_000 });
    expect(a).toEqual({ exitCode: 2, stdout: 'ok\n', stderr: 'careful\n', container: 'reused' });
  });

  test('a timeout is flagged; a replaced container says the state was lost', async () => {
    const a = await buildCodeAnswer(
      run(
        { exitCode: 124, timedOut: true, reason: 'timed out after 30000 ms; its process tree was killed' },
        { container: 'new', stateLost: 'the container was gone' },
      ),
      {
        maxOutputChars: 10_000,
      },
    );
    expect(a).toMatchObject({ exitCode: 124, timedOut: true, container: 'new', stateLost: 'the container was gone' });
    expect(a.reason).toMatch(/timed out after 30000 ms/);
  });

  test('output over the limit is cut with a marker, then summarized with its key lines and the log named', async () => {
    const lines = Array.from({ length: 2000 }, (_, i) => `row ${i}: value ${i * 7}`);
    lines[1500] = 'Traceback (most recent call last):';
    lines[1501] = '  File "<stdin>", line 9, in <module>';
    lines[1502] = "KeyError: 'price'";
    const text = `${lines.join('\n')}\n`;
    const r = run({ stdout: text, exitCode: 1, bytes: { stdout: text.length, stderr: 0 }, lines: { stdout: 2000, stderr: 0 } });
    writeFileSync(r.result.logPath, text);
    const a = await buildCodeAnswer(r, { maxOutputChars: 1000 });
    expect(a.stdout.length).toBeLessThan(1100);
    expect(a.stdout).toMatch(/\[\.\.\. \d+ characters cut; the full output is in the log \.\.\.\]/);
    expect(a.stdout.startsWith('row 0: value 0')).toBe(true);
    expect(a.keyLines).toEqual(expect.arrayContaining(["KeyError: 'price'"]));
    expect(a.summary).toMatch(/2000 lines/);
    expect(a.logPath).toBe(r.result.logPath);
  });

  test('a cut never splits a character in two (no lone surrogate reaches the model)', async () => {
    for (const shift of [0, 1]) {
      const text = `${'x'.repeat(shift)}${'😀'.repeat(5000)}`;
      const a = await buildCodeAnswer(run({ stdout: text }), { maxOutputChars: 1001 });
      expect(a.stdout.length).toBeLessThan(1100);
      expect(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/.test(a.stdout)).toBe(false);
    }
  });

  test('when both streams are long, each keeps a share and stderr is never crowded out', async () => {
    const out = 'o'.repeat(30_000);
    const err = 'e'.repeat(30_000);
    const a = await buildCodeAnswer(run({ stdout: out, stderr: err, exitCode: 1 }), { maxOutputChars: 10_000 });
    expect(a.stdout.length).toBeLessThan(5200);
    expect(a.stderr!.length).toBeLessThan(5200);
    expect(a.stderr!.startsWith('eee')).toBe(true);
  });
});
