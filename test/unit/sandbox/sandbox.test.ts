import { readFileSync } from 'node:fs';
import { DEFAULT_IMAGE, type ConfigInput } from '../../../src/config/config-schema.js';
import type { ExecSpec } from '../../../src/engine/container-engine.js';
import { SandboxError } from '../../../src/errors.js';
import type { ExecOptions, ExecResult } from '../../../src/commands/exec-types.js';
import { CANCELED_EXIT_CODE, EXEC_MARK_VAR, TIMEOUT_EXIT_CODE, type Sandbox } from '../../../src/sandbox/sandbox.js';
import { SandboxManager, type StartOptions } from '../../../src/sandbox/sandbox-manager.js';
import { KILL_TREE_SCRIPT, MARK, READ_COUNTERS_SCRIPT, wrapCommand } from '../../../src/commands/wrapper-protocol.js';
import { CPU_CEILING_S } from '../../../src/commands/exec-marks.js';
import { err, FakeEngine, out, pidMarker, type ExecScript, type FakeEngineOptions, type ScriptedExec } from '../../support/fake-engine.js';
import { removeTempDirs, sandboxError, testConfig } from '../helpers.js';

const MiB = 1024 ** 2;
const managers: SandboxManager[] = [];

async function setup(
  options: { config?: ConfigInput; engine?: FakeEngineOptions; start?: StartOptions } = {},
): Promise<{ engine: FakeEngine; sandbox: Sandbox; manager: SandboxManager }> {
  const config = testConfig(options.config);
  const engine = new FakeEngine({ images: [DEFAULT_IMAGE], ...options.engine });
  const manager = new SandboxManager({ config, engine, sessionId: '20260101-000000-abcdef', sweepOnStart: false });
  managers.push(manager);
  const sandbox = await manager.start(options.start);
  engine.clearCalls();
  return { engine, sandbox, manager };
}

/** Every command exec answers the same way. */
function always(result: ScriptedExec): ExecScript {
  return () => ({ ...result, frames: [...result.frames] });
}

afterEach(async () => {
  for (const m of managers.splice(0)) await m[Symbol.asyncDispose]();
  removeTempDirs();
});

const RESULT_KEYS = [
  'bytes',
  'canceled',
  'command',
  'diskLimitHit',
  'durationMs',
  'exitCode',
  'lines',
  'logPath',
  'oomKilled',
  'pidsLimitHit',
  'stderr',
  'stdout',
  'timedOut',
  'truncated',
];

describe('Sandbox.exec: results', () => {
  test('result shape: every flag present, output split by stream, log holds every byte', async () => {
    const { engine, sandbox } = await setup({
      engine: { script: always({ frames: [out('hello\n'), err('warn: x\n'), out('bye\n')], exitCode: 0 }) },
    });
    const r = await sandbox.exec('echo hello');
    expect(Object.keys(r).sort()).toEqual(RESULT_KEYS);
    expect(r).toEqual({
      command: 'echo hello',
      exitCode: 0,
      stdout: 'hello\nbye\n',
      stderr: 'warn: x\n',
      truncated: false,
      timedOut: false,
      canceled: false,
      oomKilled: false,
      pidsLimitHit: false,
      diskLimitHit: false,
      bytes: { stdout: 10, stderr: 8 },
      lines: { stdout: 2, stderr: 1 },
      durationMs: expect.any(Number),
      logPath: expect.stringMatching(/\/20260101-000000-abcdef\/0001-echo\.log$/),
    });
    expect(r.durationMs).toBeGreaterThanOrEqual(0);
    // Arrival order, without the wrapper's pid marker.
    expect(readFileSync(r.logPath, 'utf8')).toBe('hello\nwarn: x\nbye\n');
    const meta = JSON.parse(readFileSync(r.logPath.replace(/\.log$/, '.json'), 'utf8')) as Record<string, unknown>;
    expect(meta).toMatchObject({ container: sandbox.name, image: DEFAULT_IMAGE, command: 'echo hello', exitCode: 0, timedOut: false });
    expect(meta.stdout).toBeUndefined();
    // Only the command exec ran: no helper for a clean exit.
    expect(engine.execs.map((e) => e.kind)).toEqual(['command']);
  });

  test('the command exec: the shell wrapper, a fresh GENAICODE_DOCKER_EXEC mark (its pair of limits) first in env, workdir', async () => {
    const { engine, sandbox } = await setup({ start: { workdir: '/src' } });
    await sandbox.exec('make -j4 && echo ok', { env: { CI: '1' } });
    await sandbox.exec(['ls', '-la', 'a b'], { workdir: '/tmp', label: 'listing' });
    const [first, second] = engine.callsOf('exec').map(([, spec]) => spec);
    expect(first).toEqual({
      cmd: wrapCommand('make -j4 && echo ok'),
      env: [expect.stringMatching(new RegExp(`^${EXEC_MARK_VAR}=\\d{13}:\\d{10}$`)), 'CI=1'],
      workdir: '/src',
    });
    expect(second).toEqual({
      cmd: wrapCommand(['ls', '-la', 'a b']),
      env: [expect.stringMatching(new RegExp(`^${EXEC_MARK_VAR}=`))],
      workdir: '/tmp',
    });
    expect(first!.env![0]).not.toBe(second!.env![0]);
    expect(first!.user).toBeUndefined();
  });

  test('argv commands report the joined command and use the label for the log name', async () => {
    const { sandbox } = await setup();
    const r = await sandbox.exec(['ls', '-la'], { label: 'listing' });
    expect(r.command).toBe('ls -la');
    expect(r.logPath).toMatch(/0001-listing\.log$/);
  });

  test.each([0, 1, 2, 42, 125, 255])('exit code %p passes through, a non-zero exit is a result not a throw', async (code) => {
    const { sandbox } = await setup({ engine: { script: always({ frames: [err('failed\n')], exitCode: code }) } });
    const r = await sandbox.exec('false');
    expect(r.exitCode).toBe(code);
    expect(r.stderr).toBe('failed\n');
    expect([r.timedOut, r.canceled, r.oomKilled, r.pidsLimitHit, r.truncated]).toEqual([false, false, false, false, false]);
    expect(r.reason).toBeUndefined();
  });

  test('long output is capped in the result and whole in the log (memory bounded, backpressure honoured)', async () => {
    const frame = Buffer.alloc(64 * 1024, 'z');
    frame[frame.length - 1] = 10;
    const frames = Array.from({ length: 64 }, () => out(frame)); // 4 MiB
    const { sandbox } = await setup({ engine: { script: always({ frames, exitCode: 0 }) } });
    const r = await sandbox.exec('yes z');
    expect(r.bytes.stdout).toBe(4 * MiB);
    expect(r.lines.stdout).toBe(64);
    expect(r.truncated).toBe(true);
    expect(Buffer.byteLength(r.stdout)).toBeLessThan(16 * 1024 + 300);
    expect(r.stdout).toContain(`full output: ${r.logPath}`);
    expect(readFileSync(r.logPath).length).toBe(4 * MiB);
  });

  test('the log keeps exact bytes when several frames arrive in one turn', async () => {
    // ContainerEngine.exec: the adapter never reuses a Buffer it passed on, so the log may
    // queue it without a copy. The frames come in one turn, as when one socket chunk holds several.
    const { sandbox } = await setup({
      engine: { script: always({ frames: [out('first line\n'), err('an error\n'), out('last line\n')], exitCode: 0, framesPerTick: 4 }) },
    });
    const r = await sandbox.exec('run');
    expect(r.stdout).toBe('first line\nlast line\n');
    expect(r.stderr).toBe('an error\n');
    expect(readFileSync(r.logPath, 'utf8')).toBe('first line\nan error\nlast line\n');
  });
});

describe('Sandbox.exec: the pid marker', () => {
  async function stderrOf(frames: ScriptedExec['frames']): Promise<ExecResult> {
    const { sandbox } = await setup({ engine: { script: always({ frames, exitCode: 0, emitPidMarker: false }) } });
    return sandbox.exec('cmd');
  }

  test('the marker the fake emits first is stripped', async () => {
    const { sandbox } = await setup({ engine: { script: always({ frames: [err('boom\n')], exitCode: 1 }) } });
    const r = await sandbox.exec('cmd');
    expect(r.stderr).toBe('boom\n');
    expect(r.bytes.stderr).toBe(5);
  });

  test('stripped when split across frames', async () => {
    const r = await stderrOf([err('\x1e12'), err('34\x1eerr text')]);
    expect(r.stderr).toBe('err text');
    expect(r.bytes.stderr).toBe(8);
    expect(readFileSync(r.logPath, 'utf8')).toBe('err text');
  });

  test('stripped when every byte is its own frame', async () => {
    const bytes = Buffer.concat([pidMarker(98765), Buffer.from('abc')]);
    const r = await stderrOf([...bytes].map((b) => err(Buffer.from([b]))));
    expect(r.stderr).toBe('abc');
  });

  test('stripped when the marker arrives alone and the text in the same frame', async () => {
    expect((await stderrOf([err(Buffer.concat([pidMarker(7), Buffer.from('boom')]))])).stderr).toBe('boom');
    expect((await stderrOf([err(pidMarker(7))])).stderr).toBe('');
  });

  test('stripped even when stdout frames arrive before it', async () => {
    const r = await stderrOf([out('o1 '), out('o2\n'), err(pidMarker(77)), err('e\n'), out('o3\n')]);
    expect(r.stdout).toBe('o1 o2\no3\n');
    expect(r.stderr).toBe('e\n');
    expect(readFileSync(r.logPath, 'utf8')).toBe('o1 o2\ne\no3\n');
  });

  test('stderr that does not start with the marker passes through intact', async () => {
    const r = await stderrOf([err('plain error\n'), err('\x1e12\x1e not a marker here\n')]);
    expect(r.stderr).toBe('plain error\n\x1e12\x1e not a marker here\n');
    expect(r.bytes.stderr).toBe(Buffer.byteLength('plain error\n\x1e12\x1e not a marker here\n'));
  });

  test('the header with counters and the trailer are stripped; a trailer with no change needs no helper exec', async () => {
    // The fake overwrites every chunk after the callback, so a trailer kept by reference
    // (not copied) would come out as garbage here.
    const { sandbox, engine } = await setup({
      engine: {
        script: always({ frames: [err('\x1e41:2:5\x1e'), out('hi\n'), err('oops\n\x1e2:5\x1e')], exitCode: 1, emitPidMarker: false }),
      },
    });
    const r = await sandbox.exec('cmd');
    expect(r).toMatchObject({ stdout: 'hi\n', stderr: 'oops\n', oomKilled: false, pidsLimitHit: false, exitCode: 1 });
    expect(readFileSync(r.logPath, 'utf8')).toBe('hi\noops\n');
    expect(engine.execsOf('cgroup-counters')).toEqual([]);
  });

  test('a trailer that claims a hit is checked against the counters (a hit it claims is not believed alone)', async () => {
    const { sandbox, engine } = await setup({
      engine: {
        script: always({ frames: [err('\x1e41:2:5\x1e'), out('hi\n'), err('oops\n\x1e3:5\x1e')], exitCode: 137, emitPidMarker: false }),
      },
    });
    engine.setCgroup(sandbox.id, { oomKill: 3, pidsMax: 5 });
    const real = await sandbox.exec('cmd');
    expect(real).toMatchObject({ stdout: 'hi\n', stderr: 'oops\n', oomKilled: true, pidsLimitHit: false, exitCode: 137 });
    expect(engine.execsOf('cgroup-counters')).toHaveLength(1);
    // The same claim when the counters did not move (the command wrote it): no hit.
    engine.setCgroup(sandbox.id, { oomKill: 2, pidsMax: 5 });
    expect(await sandbox.exec('cmd')).toMatchObject({ oomKilled: false, pidsLimitHit: false });
  });

  test.each([
    ['a made-up trailer after the real one hides a hit', [err('\x1e41:2:5\x1e'), err('e\n\x1e3:6\x1e'), err('\x1e2:5\x1e')], 0],
    ['bytes after the real trailer hide it', [err('\x1e41:2:5\x1e'), err('e\n\x1e3:6\x1e'), err('late\n')], 0],
    ['a mark earlier in stderr, then a trailer that claims nothing', [err('\x1e41:2:5\x1e'), err('x\x1ey\n'), err('\x1e2:5\x1e')], 1],
  ])('%s: the counters are read instead', async (_what, frames, exitCode) => {
    const { sandbox, engine } = await setup({ engine: { script: always({ frames, exitCode, emitPidMarker: false }) } });
    engine.setCgroup(sandbox.id, { oomKill: 3, pidsMax: 6 });
    expect(await sandbox.exec('cmd')).toMatchObject({ oomKilled: true, pidsLimitHit: true, exitCode });
    expect(engine.execsOf('cgroup-counters')).toHaveLength(1);
  });

  test('a trailer split across frames is still recognised', async () => {
    const { sandbox, engine } = await setup({
      engine: {
        script: always({ frames: [err('\x1e41:0:0\x1e'), err('e\n\x1e0'), err(':1'), err('\x1e')], exitCode: 1, emitPidMarker: false }),
      },
    });
    engine.setCgroup(sandbox.id, { pidsMax: 1 });
    const r = await sandbox.exec('cmd');
    expect(r).toMatchObject({ stderr: 'e\n', oomKilled: false, pidsLimitHit: true });
  });

  test('stderr that starts with 0x1E but is not a complete marker passes through intact', async () => {
    expect((await stderrOf([err('\x1eoops\n')])).stderr).toBe('\x1eoops\n');
    expect((await stderrOf([err('\x1e12'), err('x\n')])).stderr).toBe('\x1e12x\n');
  });
});

describe('Sandbox.exec: timeout, cancellation, limits', () => {
  function killCalls(engine: FakeEngine): ExecSpec[] {
    return engine.execsOf('kill-tree').map((e) => e.spec);
  }

  test('timeout: the command is killed through the kill helper; timedOut, exit 124', async () => {
    const { engine, sandbox } = await setup({
      engine: { script: always({ frames: [out('working\n')], exitCode: null, hangUntilKilled: true }) },
    });
    const r = await sandbox.exec('sleep 1000', { timeoutMs: 200 });
    expect(r).toMatchObject({ exitCode: TIMEOUT_EXIT_CODE, timedOut: true, canceled: false, oomKilled: false, stdout: 'working\n' });
    expect(r.reason).toContain('timed out after 200 ms');
    const command = engine.execsOf('command')[0]!;
    expect(command.state).toBe('killed');
    const kills = killCalls(engine);
    expect(kills).toHaveLength(1);
    const mark = command.spec.env?.[0];
    expect(mark).toMatch(new RegExp(`^${EXEC_MARK_VAR}=\\d{13}:\\d{10}$`));
    // Helpers run as the container's user (no override): with a non-root user the engine gives
    // execs no capabilities, so only the same user can signal the command's processes.
    expect(kills[0]).toEqual({ cmd: ['/bin/sh', '-c', KILL_TREE_SCRIPT, 'sh', mark, String(CPU_CEILING_S)] });
    // Limits are read after an interruption.
    expect(engine.execsOf('cgroup-counters').map((e) => e.spec)).toEqual([{ cmd: ['/bin/sh', '-c', READ_COUNTERS_SCRIPT, 'sh'] }]);
    expect(r.durationMs).toBeGreaterThanOrEqual(190);
  });

  test('a timeout leaves no timer behind: the process can exit as soon as the answer is in', async () => {
    const { sandbox } = await setup({
      engine: { script: always({ frames: [out('working\n')], exitCode: null, hangUntilKilled: true }) },
    });
    const timers = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
    const before = timers();
    const r = await sandbox.exec('sleep 1000', { timeoutMs: 100 });
    expect(r.timedOut).toBe(true);
    // Before, the 2 s wait for the pid and the 5 s drain wait lingered after the answer.
    expect(timers()).toBeLessThanOrEqual(before);
  });

  test('timeout beside another command: the kill names only its own mark, and the other command runs on', async () => {
    const { engine, sandbox } = await setup({
      engine: { script: always({ frames: [out('working\n')], exitCode: null, hangUntilKilled: true }) },
    });
    const other = sandbox.exec('sleep 2000', { timeoutMs: 600 });
    const r = await sandbox.exec('sleep 1000', { timeoutMs: 150 });
    expect(r.timedOut).toBe(true);
    const [otherCommand, command] = engine.execsOf('command');
    const first = killCalls(engine)[0]!.cmd;
    expect(first.slice(4)).toEqual([command!.spec.env?.[0], String(CPU_CEILING_S)]);
    expect(otherCommand!.spec.env?.[0]).not.toBe(command!.spec.env?.[0]);
    expect(otherCommand!.state).toBe('running');
    await other;
    expect(killCalls(engine)[1]!.cmd.slice(4)).toEqual([otherCommand!.spec.env?.[0], String(CPU_CEILING_S)]);
  });

  test('a header split across frames is taken out of stderr; the timeout still kills by the mark', async () => {
    const { engine, sandbox } = await setup({
      engine: {
        script: always({
          frames: [out('x'), err(Buffer.from([MARK, 0x34])), err('321'), err(Buffer.from([MARK]))],
          exitCode: null,
          hangUntilKilled: true,
          emitPidMarker: false,
        }),
      },
    });
    const r = await sandbox.exec('sleep 1000', { timeoutMs: 100 });
    expect(r.timedOut).toBe(true);
    expect(r.stderr).toBe('');
    expect(killCalls(engine)[0]?.cmd[4]).toBe(engine.execsOf('command')[0]!.spec.env?.[0]);
  });

  test('the default timeout comes from the configuration', async () => {
    const { sandbox } = await setup({
      config: { exec: { timeoutMs: 100 } },
      engine: { script: always({ frames: [], exitCode: null, hangUntilKilled: true }) },
    });
    const r = await sandbox.exec('sleep 1000');
    expect(r.timedOut).toBe(true);
    expect(r.reason).toContain('timed out after 100 ms');
  });

  test('abort: canceled, exit 137, the tree killed', async () => {
    const { engine, sandbox } = await setup({
      engine: { script: always({ frames: [out('started\n')], exitCode: null, hangUntilKilled: true }) },
    });
    const ac = new AbortController();
    // Abort once the command has printed (marker + one frame), whatever the machine's load.
    void engine.waitFor((e) => (e.execsOf('command')[0]?.delivered ?? 0) >= 2).then(() => ac.abort());
    const r = await sandbox.exec('sleep 1000', { signal: ac.signal, timeoutMs: 60_000 });
    expect(r).toMatchObject({ exitCode: CANCELED_EXIT_CODE, canceled: true, timedOut: false, stdout: 'started\n' });
    expect(r.reason).toContain('canceled');
    expect(killCalls(engine)).toHaveLength(1);
    expect(engine.execsOf('command')[0]?.state).toBe('killed');
  });

  test('abort while the exec is being set up (before its end is awaited): canceled, not left to its timeout', async () => {
    const ac = new AbortController();
    // The engine starts the exec and the signal fires in that same moment: no abort event comes later.
    const script: ExecScript = () => {
      ac.abort();
      return { frames: [], exitCode: null, hangUntilKilled: true };
    };
    const { engine, sandbox } = await setup({ engine: { script } });
    const r = await sandbox.exec('sleep 1000', { signal: ac.signal, timeoutMs: 5_000 });
    expect(r).toMatchObject({ exitCode: CANCELED_EXIT_CODE, canceled: true, timedOut: false });
    expect(killCalls(engine)).toHaveLength(1);
  });

  test('a signal aborted before the call: ABORTED, nothing runs', async () => {
    const { engine, sandbox } = await setup();
    const ac = new AbortController();
    ac.abort();
    expect((await sandboxError(() => sandbox.exec('ls', { signal: ac.signal }))).code).toBe('ABORTED');
    expect(engine.calls).toEqual([]);
  });

  test('exit 137 not caused by us + oom_kill 1: oomKilled, the reason names the limit in MiB', async () => {
    let engine!: FakeEngine;
    const script: ExecScript = (id) => {
      engine.setCgroup(id, { oomKill: 1 });
      return { frames: [err('Killed\n')], exitCode: 137 };
    };
    const s = await setup({ engine: { script }, start: { memoryBytes: 256 * MiB } });
    engine = s.engine;
    const sandbox = s.sandbox;
    const r = await sandbox.exec('python eat_memory.py');
    expect(r).toMatchObject({ exitCode: 137, oomKilled: true, timedOut: false, canceled: false, pidsLimitHit: false });
    expect(r.reason).toContain('memory limit (256 MiB)');
    expect(killCalls(engine)).toEqual([]);
    // The counter is cumulative: the next 137 without a new OOM kill is not an OOM.
    engine.script = always({ frames: [], exitCode: 137 });
    const again = await sandbox.exec('kill -9 $$');
    expect(again.oomKilled).toBe(false);
    expect(again.reason).toBeUndefined();
  });

  test('pids_max 3: pidsLimitHit, the reason names the process limit', async () => {
    let engine!: FakeEngine;
    const script: ExecScript = (id) => {
      engine.setCgroup(id, { pidsMax: 3 });
      return { frames: [err('sh: can\u2019t fork\n')], exitCode: 137 };
    };
    const s = await setup({ engine: { script }, start: { pids: 64 } });
    engine = s.engine;
    const r = await s.sandbox.exec(':(){ :|:& };:');
    expect(r).toMatchObject({ pidsLimitHit: true, oomKilled: false, exitCode: 137 });
    expect(r.reason).toContain('process limit (64 processes)');
  });

  test('a limit hit while another command ran beside it says that the other one may be the cause', async () => {
    let engine!: FakeEngine;
    const script: ExecScript = (id, spec) => {
      // The background command's header carries the counters at its start, as the real wrapper's does.
      if (spec.cmd.join(' ').includes('sleep 100'))
        return { frames: [err('\x1e77:0:0\x1e')], exitCode: null, hangUntilKilled: true, emitPidMarker: false };
      engine.setCgroup(id, { oomKill: (n += 1) });
      return { frames: [err('Killed\n')], exitCode: 137 };
    };
    let n = 0;
    const s = await setup({ engine: { script } });
    engine = s.engine;
    const ac = new AbortController();
    const background = s.sandbox.exec('sleep 100', { signal: ac.signal });
    const r = await s.sandbox.exec('python eat_memory.py');
    expect(r.oomKilled).toBe(true);
    expect(r.reason).toContain('another command ran in this container at the same time, and the limit may have hit that one instead');
    ac.abort();
    const bg = await background;
    // The background command saw the container's OOM kill too, and says the same.
    expect(bg).toMatchObject({ canceled: true, oomKilled: true });
    expect(bg.reason).toContain('another command ran in this container at the same time');
    // Alone again: the kill is its own.
    const alone = await s.sandbox.exec('python eat_memory.py');
    expect(alone.oomKilled).toBe(true);
    expect(alone.reason).not.toContain('another command');
  });

  test('a fork refused during a command that exits 2 is reported on that command, not on a later one', async () => {
    let engine!: FakeEngine;
    let n = 0;
    const script: ExecScript = (id) => {
      n += 1;
      if (n === 1) {
        engine.setCgroup(id, { pidsMax: 3 }); // forks refused while the first command ran
        return { frames: [err('sh: fork: Resource temporarily unavailable\n')], exitCode: 2 };
      }
      return { frames: [], exitCode: 137 }; // second command: killed by a signal, no new refusal
    };
    const s = await setup({ engine: { script } });
    engine = s.engine;
    const first = await s.sandbox.exec('./spawn-many');
    const second = await s.sandbox.exec('kill -9 $$');
    expect({ first: first.pidsLimitHit, second: second.pidsLimitHit }).toEqual({ first: true, second: false });
  });

  test('a failing counters helper does not fail the command', async () => {
    const s = await setup({
      engine: {
        script: always({ frames: [], exitCode: 139 }),
        helperScript: (_id, _spec, kind) => (kind === 'cgroup-counters' ? { frames: [err('sh: cannot open\n')], exitCode: 2 } : undefined),
      },
    });
    const r = await s.sandbox.exec('./segfault');
    expect(r).toMatchObject({ exitCode: 139, oomKilled: false, pidsLimitHit: false });
  });
});

describe('Sandbox.exec: invalid options', () => {
  test.each<[string, string | string[], ExecOptions, string]>([
    ['timeoutMs 0', 'ls', { timeoutMs: 0 }, 'timeoutMs'],
    ['timeoutMs negative', 'ls', { timeoutMs: -5 }, 'timeoutMs'],
    ['timeoutMs fractional', 'ls', { timeoutMs: 1.5 }, 'timeoutMs'],
    ['timeoutMs above a day', 'ls', { timeoutMs: 24 * 3600 * 1000 + 1 }, 'timeoutMs'],
    ['timeoutMs below the configurable least (100 ms)', 'ls', { timeoutMs: 99 }, 'timeoutMs'],
    ['relative workdir', 'ls', { workdir: 'src' }, 'workdir: must be an absolute path'],
    ['bad env name', 'ls', { env: { 'BAD-NAME': 'x' } }, 'Environment variable name "BAD-NAME"'],
    ['env name starting with a digit', 'ls', { env: { '1X': 'x' } }, '"1X"'],
    ['empty command', '', {}, 'The command is empty'],
    ['blank command', '   \n', {}, 'The command is empty'],
    ['empty argv', [], {}, 'The command is empty'],
  ])('%s: INVALID_ARGUMENT before any engine call', async (_what, command, options, message) => {
    const { engine, sandbox } = await setup();
    const e = await sandboxError(() => sandbox.exec(command, options));
    expect(e.code).toBe('INVALID_ARGUMENT');
    expect(e.message).toContain(message);
    expect(engine.calls).toEqual([]);
  });
});

describe('Sandbox: stop and a vanished container', () => {
  test('stop() is idempotent: engine stop and remove called once', async () => {
    const { engine, sandbox, manager } = await setup();
    await Promise.all([sandbox.stop(), sandbox.stop()]);
    await sandbox.stop();
    await sandbox[Symbol.asyncDispose]();
    expect(engine.callsOf('stopContainer')).toEqual([[sandbox.id, 1]]);
    expect(engine.callsOf('removeContainer')).toEqual([[sandbox.id, true]]);
    expect(sandbox.isStopped).toBe(true);
    expect(manager.list()).toEqual([]);
    expect(engine.containers.has(sandbox.id)).toBe(false);
  });

  test('a stop that fails falls back to a forced removal', async () => {
    const { engine, sandbox, manager } = await setup();
    engine.fail('stopContainer', new SandboxError('ENGINE_ERROR', 'Stop container: timeout'), { times: 1 });
    await sandbox.stop();
    expect(engine.callsOf('removeContainer')).toHaveLength(1);
    expect(engine.callsOf('removeContainer')[0]).toEqual([sandbox.id, true]);
    expect(manager.list()).toEqual([]);
  });

  test('a stop() whose forced removal failed too can be retried; the sandbox stays tracked until it succeeds', async () => {
    const { engine, sandbox, manager } = await setup();
    const failure = new SandboxError('ENGINE_ERROR', 'Remove container: timeout');
    engine.fail('stopContainer', new SandboxError('ENGINE_ERROR', 'Stop container: timeout'), { times: 1 });
    engine.fail('removeContainer', failure, { times: 1 });
    expect(await sandboxError(() => sandbox.stop())).toBe(failure);
    expect(manager.list()).toEqual([sandbox]);
    await sandbox.stop();
    expect(engine.callsOf('stopContainer')).toHaveLength(2);
    expect(engine.callsOf('removeContainer')).toHaveLength(2);
    expect(manager.list()).toEqual([]);
  });

  test('stop() of a container already gone does not try to remove it', async () => {
    const { engine, sandbox } = await setup();
    engine.containers.delete(sandbox.id);
    await sandbox.stop();
    expect(engine.callsOf('removeContainer')).toEqual([]);
  });

  test('exec after stop: CONTAINER_NOT_FOUND without an engine call', async () => {
    const { engine, sandbox } = await setup();
    await sandbox.stop();
    engine.clearCalls();
    const e = await sandboxError(() => sandbox.exec('ls'));
    expect(e.code).toBe('CONTAINER_NOT_FOUND');
    expect(e.message).toContain(sandbox.name);
    expect(e.data.containerId).toBe(sandbox.id);
    expect(engine.calls).toEqual([]);
  });

  test('a container removed behind our back: CONTAINER_NOT_FOUND naming the sandbox', async () => {
    const { engine, sandbox } = await setup();
    engine.containers.delete(sandbox.id);
    const e = await sandboxError(() => sandbox.exec('ls'));
    expect(e.code).toBe('CONTAINER_NOT_FOUND');
    expect(e.message).toContain(sandbox.name);
    expect(e.message).toContain('Start a new one');
  });

  test('a container stopped while a command runs: the result names it and keeps the partial output; the next command is CONTAINER_NOT_FOUND', async () => {
    const { engine, sandbox } = await setup({
      engine: { script: always({ frames: [out('partial\n')], exitCode: null, hangUntilKilled: true }) },
    });
    void engine.waitFor((e) => (e.execsOf('command')[0]?.delivered ?? 0) >= 2).then(() => engine.stopContainer(sandbox.id, 0));
    const r = await sandbox.exec('sleep 1000', { timeoutMs: 60_000 });
    expect(r).toMatchObject({ exitCode: 137, timedOut: false, canceled: false, stdout: 'partial\n' });
    // The fake engine auto-removes a stopped container, as Docker does with AutoRemove.
    expect(r.reason).toMatch(/^the container (stopped|was removed) while the command ran .*from outside/);
    expect(readFileSync(r.logPath, 'utf8')).toBe('partial\n');
    const next = await sandboxError(() => sandbox.exec('true'));
    expect(next.code).toBe('CONTAINER_NOT_FOUND');
    expect(next.message).toMatch(/from outside/);
  });

  test('an engine failure starting the exec is thrown as it is', async () => {
    const { engine, sandbox } = await setup();
    const down = new SandboxError('ENGINE_UNAVAILABLE', 'No container engine answers');
    engine.fail('exec', down);
    expect(await sandboxError(() => sandbox.exec('ls'))).toBe(down);
  });
});
