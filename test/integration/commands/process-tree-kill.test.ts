/**
 * A timeout or an abort kills the command's whole process tree inside the container:
 * background children, a grandchild, a double-forked daemon, a setsid child and a nohup
 * child; nothing is left running and no zombie stays behind.
 */
import { LABEL, type Sandbox } from '../../../src/index.js';
import { KILL_TREE_SCRIPT } from '../../../src/commands/wrapper-protocol.js';
import { CPU_CEILING_S, ExecMarks } from '../../../src/commands/exec-marks.js';
import {
  dockerOk,
  INIT_COMMAND,
  KEPT_SHELL_COMMAND,
  listManaged,
  MINIMAL_IMAGE,
  PYTHON_IMAGE,
  RecordingEngine,
  withManager,
  engineSuite,
} from '../../support/engine.js';

engineSuite('process-tree');

const TTL = 3600;
/** The timeout of the tree-killing tests: long enough for a tree to come up and be listed first, even under load. */
const TREE_TIMEOUT_MS = 8000;

/**
 * Starts, in the busybox image: background children, a subshell with a grandchild, a
 * double-forked daemon (re-parented to init), a setsid child (own session and group) and a
 * nohup child (busybox has no nohup applet, so it is done as nohup does it: SIGHUP ignored,
 * output away from the terminal), then sleeps. Every process has a distinct `sleep 10NN`.
 */
const BUSYBOX_TREE = [
  'sleep 1001 &',
  '(sleep 1002; echo never) &',
  "sh -c 'sleep 1003 & wait' &",
  "sh -c 'sleep 1004 >/dev/null 2>&1 &'",
  'setsid sleep 1005 &',
  "(trap '' HUP; exec sleep 1006) >/dev/null 2>&1 &",
  'echo started',
  'sleep 1000',
].join('\n');

interface Proc {
  pid: number;
  ppid: number;
  stat: string;
  args: string;
}

/** The container's processes, from busybox ps in a second exec. */
async function busyboxProcesses(sb: Sandbox): Promise<Proc[]> {
  const r = await sb.exec(['ps', '-o', 'pid,ppid,stat,args']);
  expect(r.exitCode).toBe(0);
  return r.stdout
    .split('\n')
    .slice(1)
    .filter((l) => l.trim())
    .map((l) => {
      const m = /^\s*(\d+)\s+(\d+)\s+(\S+)\s+(.*)$/.exec(l);
      if (!m) throw new Error(`unexpected ps line: ${JSON.stringify(l)}`);
      return { pid: Number(m[1]), ppid: Number(m[2]), stat: m[3]!, args: m[4]! };
    });
}

/** Only init, the keep-alive `sleep <ttl>`, the kept shell (idle) and ps itself may be left. */
function expectOnlyBaseProcesses(procs: Proc[]): void {
  expect(procs.filter((p) => p.stat.startsWith('Z'))).toEqual([]);
  expect(procs.filter((p) => /sleep 10\d\d/.test(p.args))).toEqual([]);
  const rest = procs.filter(
    (p) =>
      !(p.pid === 1 && INIT_COMMAND.test(p.args)) &&
      p.args !== `sleep ${TTL}` &&
      !p.args.includes('ps -o pid,ppid,stat,args') &&
      !KEPT_SHELL_COMMAND.test(p.args),
  );
  expect(rest).toEqual([]);
  expect(procs.some((p) => p.pid === 1)).toBe(true);
  expect(procs.some((p) => p.args === `sleep ${TTL}`)).toBe(true);
}

/** Waits until the tree is fully up (six sleeps besides the main one), so the kill has work to do. */
async function waitForTree(sb: Sandbox, pattern: RegExp, count: number): Promise<void> {
  for (let i = 0; i < 50; i++) {
    const r = await sb.exec(['ps', '-o', 'args']);
    if (r.stdout.split('\n').filter((l) => pattern.test(l)).length >= count) return;
    await new Promise((r2) => setTimeout(r2, 50));
  }
  throw new Error('the process tree did not come up');
}

/** The container's processes, listed by python from /proc (the Debian image has no ps). */
async function pythonProcesses(sb: Sandbox): Promise<Array<{ pid: number; ppid: number; state: string; cmd: string }>> {
  const list = await sb.exec([
    'python3',
    '-c',
    [
      'import os',
      'for p in sorted((d for d in os.listdir("/proc") if d.isdigit()), key=int):',
      '    try:',
      '        st = open(f"/proc/{p}/stat").read().rsplit(")", 1)[1].split()',
      '        cmd = open(f"/proc/{p}/cmdline", "rb").read().replace(b"\\0", b" ").replace(b"\\n", b" ").decode().strip()',
      '    except OSError:',
      '        continue',
      '    print(p, st[1], st[0], cmd, sep="\\t")',
    ].join('\n'),
  ]);
  expect(list.exitCode).toBe(0);
  return list.stdout
    .trim()
    .split('\n')
    .map((l) => l.split('\t'))
    .map(([pid, ppid, state, cmd]) => ({ pid: Number(pid), ppid: Number(ppid), state: state ?? '?', cmd: cmd ?? '' }));
}

test.concurrent(
  'a kill of a mark no exec has takes nothing: not init, the keep-alive, the kept shell, nor the exec it runs in; a malformed mark is refused',
  async () => {
    await withManager(async (manager) => {
      const sb = await manager.start({ ttlSeconds: TTL });
      expect((await sb.exec('cd /tmp && echo ok')).stdout).toBe('ok\n');
      // Just above every exec's RSS and just below every exec's CPU time (exec-marks.ts): an empty down-set.
      const r = await sb.exec([
        '/bin/sh',
        '-c',
        KILL_TREE_SCRIPT,
        'sh',
        `GENAICODE_DOCKER_EXEC=${2 ** 40}:1000000000`,
        String(CPU_CEILING_S),
      ]);
      expect(r).toMatchObject({ exitCode: 0, stdout: 'gone 0\n' });
      // A bare number would match every environment holding the digit: refused, nothing killed.
      for (const bad of [
        ['1', String(TTL)],
        ['GCD=1', '9'],
        ['GCD=1:2:3', '9'],
        ['GCD=1:2', 'x'],
      ]) {
        expect(await sb.exec(['/bin/sh', '-c', KILL_TREE_SCRIPT, 'sh', ...bad])).toMatchObject({ exitCode: 2, stdout: 'bad mark\n' });
      }
      expect((await sb.exec('echo "$PWD"')).stdout).toBe('/tmp\n');
      expect((await busyboxProcesses(sb)).some((p) => p.args === `sleep ${TTL}`)).toBe(true);
    });
  },
  60_000,
);

test.concurrent(
  "a kill takes only its mark's processes, never another exec's (a command started by an exec of its own)",
  async () => {
    await withManager(async (manager) => {
      const sb = await manager.start({ ttlSeconds: TTL });
      // Another command's process, started by an exec of its own: in the container its parent is 0.
      // Its end comes with the stop below (CONTAINER_NOT_FOUND): handled from the start.
      const other = sb.exec(['sleep', '1077'], { timeoutMs: 30_000 }).catch(() => undefined);
      await waitForTree(sb, /^sleep 1077$/, 1);
      const mark = new ExecMarks().next();
      const r = await sb.exec(['/bin/sh', '-c', KILL_TREE_SCRIPT, 'sh', mark, String(CPU_CEILING_S)]);
      expect(r.stdout.trim()).toBe('gone 0');
      expect((await busyboxProcesses(sb)).some((p) => p.args === 'sleep 1077')).toBe(true);
      expect((await sb.exec('echo still-here')).stdout).toBe('still-here\n');
      await sb.stop();
      await other;
    });
  },
  60_000,
);

test.concurrent(
  'timeout: timedOut, exit 124, fast, and the whole tree is gone with no zombie',
  async () => {
    await withManager(async (manager) => {
      const sb = await manager.start({ ttlSeconds: TTL });
      const pending = sb.exec(BUSYBOX_TREE, { timeoutMs: TREE_TIMEOUT_MS });
      await waitForTree(sb, /^sleep 10(0[1-6])$/, 6);
      const r = await pending;
      expect(r).toMatchObject({ timedOut: true, canceled: false, exitCode: 124, oomKilled: false, pidsLimitHit: false });
      expect(r.durationMs).toBeGreaterThanOrEqual(TREE_TIMEOUT_MS - 100);
      expect(r.durationMs).toBeLessThan(TREE_TIMEOUT_MS + 10_000);
      expect(r.reason).toMatch(new RegExp(`timed out after ${TREE_TIMEOUT_MS} ms`));
      expect(r.stdout).toBe('started\n');
      expectOnlyBaseProcesses(await busyboxProcesses(sb));
      // And the container is still usable.
      expect((await sb.exec('echo ok')).stdout).toBe('ok\n');
    });
  },
  60_000,
);

test.concurrent(
  'abort mid-command: canceled, exit 137, and the whole tree is gone with no zombie',
  async () => {
    await withManager(async (manager) => {
      const sb = await manager.start({ ttlSeconds: TTL });
      const ac = new AbortController();
      const started = performance.now();
      const pending = sb.exec(BUSYBOX_TREE, { signal: ac.signal, timeoutMs: 60_000 });
      await waitForTree(sb, /^sleep 10(0[1-6])$/, 6);
      ac.abort();
      const r = await pending;
      expect(r).toMatchObject({ canceled: true, timedOut: false, exitCode: 137 });
      expect(performance.now() - started).toBeLessThan(15_000);
      expect(r.reason).toMatch(/canceled/);
      expectOnlyBaseProcesses(await busyboxProcesses(sb));
      expect((await sb.exec('echo ok')).stdout).toBe('ok\n');
    });
  },
  60_000,
);

test.concurrent(
  'abort before start: exec throws ABORTED and runs nothing; start throws ABORTED and creates nothing',
  async () => {
    await withManager(async (manager) => {
      const sb = await manager.start({ ttlSeconds: TTL });
      const ac = new AbortController();
      ac.abort();
      await expect(sb.exec('touch /tmp/should-not-exist', { signal: ac.signal })).rejects.toMatchObject({
        name: 'SandboxError',
        code: 'ABORTED',
      });
      expect((await sb.exec('[ -e /tmp/should-not-exist ] && echo exists || echo absent')).stdout).toBe('absent\n');

      const before = manager.list().length;
      await expect(manager.start({ signal: ac.signal })).rejects.toMatchObject({ name: 'SandboxError', code: 'ABORTED' });
      expect(manager.list().length).toBe(before);
    });
  },
  60_000,
);

test.concurrent(
  'an aborted start makes no engine call and creates no container',
  async () => {
    const engine = new RecordingEngine();
    await withManager(
      async (manager) => {
        const ac = new AbortController();
        ac.abort();
        await expect(manager.start({ image: MINIMAL_IMAGE, signal: ac.signal })).rejects.toMatchObject({ code: 'ABORTED' });
        expect(engine.calls).toEqual([]);
        expect(manager.list()).toEqual([]);
        expect(await listManaged({ [LABEL.session]: manager.sessionId })).toEqual([]);
      },
      { engine },
    );
  },
  60_000,
);

test.concurrent(
  'timeout in a Debian image: real nohup, setsid and disown children are gone too',
  async () => {
    await withManager(async (manager) => {
      const sb = await manager.start({ image: PYTHON_IMAGE, ttlSeconds: TTL });
      const tree = [
        'nohup sleep 1011 >/dev/null 2>&1 &',
        'setsid sleep 1012 &',
        'setsid -f sleep 1013',
        "bash -c 'sleep 1014 & disown'",
        'sleep 1010',
      ].join('\n');
      const pending = sb.exec(tree, { timeoutMs: TREE_TIMEOUT_MS });
      for (let i = 0; ; i++) {
        const up = (await pythonProcesses(sb)).filter((p) => /^sleep 101[0-4]$/.test(p.cmd));
        if (up.length === 5) break;
        if (i > 40) throw new Error(`the process tree did not come up: ${JSON.stringify(up)}`);
      }
      const r = await pending;
      expect(r).toMatchObject({ timedOut: true, exitCode: 124 });
      expect(r.durationMs).toBeLessThan(TREE_TIMEOUT_MS + 10_000);
      const procs = await pythonProcesses(sb);
      expect(procs.filter((p) => p.state === 'Z')).toEqual([]);
      expect(procs.filter((p) => /sleep 10\d\d/.test(p.cmd))).toEqual([]);
      // Left: init, the keep-alive sleep, the kept shell (idle), and the lister with its exec wrapper.
      const rest = procs.filter(
        (p) =>
          p.pid !== 1 &&
          p.cmd !== `sleep ${TTL}` &&
          !p.cmd.startsWith('python3 -c') &&
          !p.cmd.startsWith('/bin/sh -c counters() {') &&
          !KEPT_SHELL_COMMAND.test(p.cmd),
      );
      expect(rest).toEqual([]);
    });
  },
  60_000,
);

test.concurrent(
  "a timeout kills only its own command's tree, not a concurrent command in the same container",
  async () => {
    await withManager(async (manager) => {
      const sb = await manager.start({ ttlSeconds: TTL });
      // The other command runs until told to end (its end would take its background sleep with it).
      const other = sb.exec('sleep 1031 & while [ ! -e /tmp/other-may-end ]; do sleep 1; done; echo other-done', { timeoutMs: 60_000 });
      const r = await sb.exec('sleep 1032 & sleep 1033', { timeoutMs: 1000 });
      expect(r).toMatchObject({ timedOut: true, exitCode: 124 });
      const procs = await busyboxProcesses(sb);
      expect(procs.filter((p) => /sleep 103[23]/.test(p.args))).toEqual([]);
      expect(procs.filter((p) => p.args === 'sleep 1031')).toHaveLength(1);
      await sb.exec('touch /tmp/other-may-end');
      expect(await other).toMatchObject({ exitCode: 0, timedOut: false, stdout: 'other-done\n' });
    });
  },
  60_000,
);

test.concurrent(
  'as a non-root user (config.user): the timeout still kills the whole tree',
  async () => {
    await withManager(
      async (manager) => {
        const sb = await manager.start({ ttlSeconds: TTL });
        expect((await sb.exec('id -u')).stdout).toBe('65534\n');
        const pending = sb.exec(BUSYBOX_TREE, { timeoutMs: TREE_TIMEOUT_MS, workdir: '/tmp' });
        await waitForTree(sb, /^sleep 10(0[1-6])$/, 6);
        const r = await pending;
        expect(r).toMatchObject({ timedOut: true, exitCode: 124 });
        expectOnlyBaseProcesses(await busyboxProcesses(sb));
      },
      { overrides: { user: '65534:65534' } },
    );
  },
  60_000,
);

/**
 * Execs that are not the command's, started after it: the engine runs them as roots whose
 * parent is outside the container (a helper, the file mover, the lease watch, an exec the
 * engine is still setting up). A timeout's kill must neither freeze nor kill them, nor what
 * runs under them: a frozen `runc init` holds the engine's lock on the container for good
 * (inspect and removal hang until its keep-alive ends).
 */
test.concurrent.each([
  ['a lone root', 'exec sleep 1071', /^sleep 1071$/, 1],
  ['a root and its children', 'sleep 1072 & sleep 1073 & wait', /^sleep 107[23]$/, 2],
  ['a root with a grandchild', "sh -c 'sleep 1074 & wait' & wait", /^sleep 1074$/, 1],
])(
  'a timeout leaves another exec alone, started after the command: %s',
  async (_what, script, pattern, count) => {
    await withManager(async (manager) => {
      const sb = await manager.start({ ttlSeconds: TTL });
      const pending = sb.exec('sleep 1000', { timeoutMs: TREE_TIMEOUT_MS });
      await waitForTree(sb, /^sleep 1000$/, 1);
      await dockerOk(['exec', '-d', sb.id, 'sh', '-c', script]);
      await waitForTree(sb, pattern, count);
      expect(await pending).toMatchObject({ timedOut: true, exitCode: 124 });
      const left = (await busyboxProcesses(sb)).filter((p) => pattern.test(p.args));
      expect(left).toHaveLength(count);
      // Running or sleeping, never stopped (T) by a freeze that was not undone.
      expect(left.filter((p) => p.stat.startsWith('T'))).toEqual([]);
      expect((await busyboxProcesses(sb)).filter((p) => p.args === 'sleep 1000')).toEqual([]);
    });
  },
  60_000,
);

/**
 * Processes that drop every link the tree walk follows: a new session (setsid), a double
 * fork (re-parented to init), and a cleared environment (env -i: no marker). Each is a
 * distinct `sleep 10NN`.
 */
const ESCAPES = [
  "setsid sh -c 'env -i sleep 1041 & ' &",
  'sh -c \'setsid env -i sh -c "sleep 1042 & " & \' &',
  'env -i setsid sh -c \'env -i sh -c "env -i sleep 1043 &"\' &',
  'echo started',
  'sleep 1000',
].join('\n');

test.concurrent(
  'timeout: a daemon that left with setsid, a double fork and env -i dies too, and the answer says the tree was killed',
  async () => {
    await withManager(async (manager) => {
      const sb = await manager.start({ ttlSeconds: TTL });
      const pending = sb.exec(ESCAPES, { timeoutMs: TREE_TIMEOUT_MS });
      await waitForTree(sb, /^sleep 104[1-3]$/, 3);
      const up = await busyboxProcesses(sb);
      // They did escape every link: no marker, own session, parent init.
      expect(up.filter((p) => /^sleep 104[1-3]$/.test(p.args)).every((p) => p.ppid === 1)).toBe(true);
      const r = await pending;
      expect(r).toMatchObject({ timedOut: true, exitCode: 124 });
      expect(r.reason).toMatch(/its process tree was killed/);
      expect(r.reason).not.toMatch(/left|survived/);
      expectOnlyBaseProcesses(await busyboxProcesses(sb));
    });
  },
  60_000,
);

/**
 * Daemons that left the tree and claim a marker of their own making: an all-zero value,
 * a short one, and the variable name with nothing after it. Only the exact marker of a
 * command running now spares a process.
 */
const FORGED_MARKS = [
  "setsid env -i GENAICODE_DOCKER_EXEC=0000000000000000 sh -c 'sleep 1061 &' &",
  "setsid env -i GENAICODE_DOCKER_EXEC=x sh -c 'sleep 1062 &' &",
  "setsid env -i GENAICODE_DOCKER_EXEC= sh -c 'sleep 1063 &' &",
  'echo started',
  'sleep 1000',
].join('\n');

test.concurrent(
  'timeout: daemons carrying a made-up command marker die too',
  async () => {
    await withManager(async (manager) => {
      const sb = await manager.start({ ttlSeconds: TTL });
      const pending = sb.exec(FORGED_MARKS, { timeoutMs: TREE_TIMEOUT_MS });
      await waitForTree(sb, /^sleep 106[1-3]$/, 3);
      const r = await pending;
      expect(r).toMatchObject({ timedOut: true, exitCode: 124 });
      expect(r.reason).not.toMatch(/left|survived/);
      expectOnlyBaseProcesses(await busyboxProcesses(sb));
    });
  },
  60_000,
);

test.concurrent(
  'a process started before the command, by another command that has ended, is left alone',
  async () => {
    await withManager(async (manager) => {
      const sb = await manager.start({ ttlSeconds: TTL });
      // A service meant to outlive its command: setsid, as the README says.
      // (It waits until setsid has run: before that the service is still in the command's group.)
      expect((await sb.exec("setsid sh -c 'exec sleep 1051' >/dev/null 2>&1 < /dev/null & sleep 1; echo ok")).stdout).toBe('ok\n');
      expect((await busyboxProcesses(sb)).filter((p) => p.args === 'sleep 1051')).toHaveLength(1);
      const r = await sb.exec('sleep 1000', { timeoutMs: 1500 });
      expect(r.timedOut).toBe(true);
      const procs = await busyboxProcesses(sb);
      expect(procs.filter((p) => p.args === 'sleep 1051')).toHaveLength(1);
      expect(procs.filter((p) => p.args === 'sleep 1000')).toEqual([]);
    });
  },
  60_000,
);
