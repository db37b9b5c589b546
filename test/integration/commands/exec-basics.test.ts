/**
 * The plain exec contract against a real engine: exit codes as results, stdout and stderr
 * kept apart, environment and working directory, argument vectors versus shell strings.
 */
import { readFileSync } from 'node:fs';
import { sharedSandbox, withManager, engineSuite } from '../../support/engine.js';

const shared = sharedSandbox({ env: { FROM_START: 'start-value' } });
const sandbox = shared.get;

engineSuite('exec-basics', {
  afterAll: async () => {
    await shared.release();
  },
});

describe('exit codes are results, not errors', () => {
  test.concurrent('exit 0, exit 3, and 127 for a missing command (shell string and argv)', async () => {
    const sb = await sandbox();
    const [ok, three, missing, missingArgv] = await Promise.all([
      sb.exec('true'),
      sb.exec('exit 3'),
      sb.exec('no-such-command-xyz'),
      sb.exec(['no-such-command-xyz', 'arg']),
    ]);
    expect(ok).toMatchObject({ exitCode: 0, timedOut: false, canceled: false, oomKilled: false, pidsLimitHit: false, truncated: false });
    expect(three.exitCode).toBe(3);
    expect(three.reason).toBeUndefined();
    expect(missing.exitCode).toBe(127);
    expect(missing.stderr).toMatch(/not found/);
    expect(missingArgv.exitCode).toBe(127);
    expect(missingArgv.stderr).toMatch(/no-such-command-xyz/);
  });

  test.concurrent('every flag is present on a successful result, with sane counts and a log file', async () => {
    const sb = await sandbox();
    const r = await sb.exec('printf "one\\ntwo\\nthree"');
    expect(r.command).toBe('printf "one\\ntwo\\nthree"');
    expect(r.stdout).toBe('one\ntwo\nthree');
    expect(r.bytes).toEqual({ stdout: 13, stderr: 0 });
    expect(r.lines).toEqual({ stdout: 3, stderr: 0 });
    expect(typeof r.durationMs).toBe('number');
    expect(r.durationMs).toBeGreaterThanOrEqual(0);
    for (const flag of ['truncated', 'timedOut', 'canceled', 'oomKilled', 'pidsLimitHit'] as const) expect(r[flag]).toBe(false);
    expect(readFileSync(r.logPath, 'utf8')).toBe('one\ntwo\nthree');
  });
});

describe('stdout and stderr', () => {
  test.concurrent('are kept apart, in order, with nothing of the wrapper leaking into either', async () => {
    const sb = await sandbox();
    const r = await sb.exec('echo out1; echo err1 >&2; echo out2; echo err2 >&2; exit 5');
    expect(r.exitCode).toBe(5);
    expect(r.stdout).toBe('out1\nout2\n');
    expect(r.stderr).toBe('err1\nerr2\n');
    expect(r.bytes).toEqual({ stdout: 10, stderr: 10 });
    expect(r.lines).toEqual({ stdout: 2, stderr: 2 });
    // The log has every byte of both streams (and not the pid marker the wrapper writes).
    const log = readFileSync(r.logPath, 'utf8');
    expect(log.length).toBe(20);
    expect(log).not.toContain('\x1e');
    expect(log.split('\n').filter(Boolean).sort()).toEqual(['err1', 'err2', 'out1', 'out2']);
  });

  test.concurrent('stderr only: stdout is empty', async () => {
    const sb = await sandbox();
    const r = await sb.exec(['sh', '-c', 'echo only-err >&2']);
    expect(r).toMatchObject({ exitCode: 0, stdout: '', stderr: 'only-err\n', bytes: { stdout: 0, stderr: 9 } });
  });
});

describe('environment and working directory', () => {
  test.concurrent('env option reaches the command; values are not split or expanded', async () => {
    const sb = await sandbox();
    const r = await sb.exec('printf "%s|%s|%s" "$FOO" "$EMPTY_ONE" "$FROM_START"', {
      env: { FOO: 'bar baz $HOME ;x', EMPTY_ONE: '' },
    });
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toBe('bar baz $HOME ;x||start-value');
  });

  test.concurrent('workdir option, and the default workdir', async () => {
    const sb = await sandbox();
    const [dflt, tmp] = await Promise.all([sb.exec('pwd'), sb.exec('pwd', { workdir: '/tmp' })]);
    expect(dflt.stdout).toBe('/workspace\n');
    expect(tmp.stdout).toBe('/tmp\n');
  });

  test.concurrent('start options env and workdir', async () => {
    await withManager(async (manager) => {
      const sb = await manager.start({ env: { GREETING: 'hello world' }, workdir: '/srv/app' });
      const r = await sb.exec('echo "$GREETING in $(pwd)"');
      expect(r.stdout).toBe('hello world in /srv/app\n');
      await sb.stop();
    });
  });

  test.concurrent('invalid options are rejected before anything runs', async () => {
    const sb = await sandbox();
    await expect(sb.exec('true', { workdir: 'relative' })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    await expect(sb.exec('true', { env: { 'BAD-NAME': '1' } })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    await expect(sb.exec('true', { timeoutMs: 0 })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    await expect(sb.exec('   ')).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
  });
});

describe('argv form versus shell string', () => {
  test.concurrent('argv runs without a shell: no expansion, no word splitting, no operators', async () => {
    const sb = await sandbox();
    const r = await sb.exec(['printf', '[%s]', '$HOME', 'a b', '*', ';', 'echo', 'x', '&&', '|']);
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toBe('[$HOME][a b][*][;][echo][x][&&][|]');
  });

  test.concurrent('a shell string gets expansion, pipes and operators', async () => {
    const sb = await sandbox();
    const r = await sb.exec('X=inner; echo "$X" | tr a-z A-Z && echo $((6 * 7)); false || echo fallback');
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toBe('INNER\n42\nfallback\n');
  });

  test.concurrent('argv with an argument starting with a dash, and an empty argument', async () => {
    const sb = await sandbox();
    const r = await sb.exec(['printf', '<%s>', '-n', '', '--']);
    expect(r.stdout).toBe('<-n><><-->');
  });
});

describe('capabilities', () => {
  test.concurrent(
    "a container user who is not root holds none of the capabilities given back to the container's root, on every engine",
    async () => {
      // Docker gives such a user none; Podman would make every added one ambient (CHOWN,
      // DAC_OVERRIDE, FOWNER, SETUID...), so there a user who is not root gets none added.
      await withManager(
        async (manager) => {
          const sb = await manager.start({});
          const r = await sb.exec("id -u; grep -E '^Cap(Eff|Amb|Prm):' /proc/self/status", {
            timeoutMs: 20_000,
          });
          expect(r.exitCode).toBe(0);
          expect(r.stdout).toMatch(/^1000\n/);
          expect(r.stdout).toMatch(/^CapPrm:\s+0+$/m);
          expect(r.stdout).toMatch(/^CapEff:\s+0+$/m);
          expect(r.stdout).toMatch(/^CapAmb:\s+0+$/m);
          // And root's still has them: the base set (CHOWN, DAC_OVERRIDE, FOWNER, ...).
          const root = await withManager(async (m) => (await (await m.start({})).exec("grep '^CapEff:' /proc/self/status")).stdout, {
            overrides: { user: '0:0' },
          });
          expect(root).not.toMatch(/^CapEff:\s+0+$/m);
        },
        { overrides: { user: '1000:1000' } },
      );
    },
    60_000,
  );
});
