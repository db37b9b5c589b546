/**
 * A command cannot hide a process from its own kill by copying another exec's mark. Every
 * process of the container runs as one user, so a command can read the environment of a
 * background process, of the kept shell or of another command in /proc and give it to a
 * daemon of its own; the kill (a timeout's, or stopProcess) must still end that daemon, and
 * must still spare the exec whose mark was copied.
 */
import { copier, processes, running, waitForProcess } from '../../support/mark-copier.js';
import { dockerOk, MINIMAL_IMAGE, PYTHON_IMAGE, withManager, engineSuite } from '../../support/engine.js';
import { CPU_CEILING_S, ExecMarks } from '../../../src/commands/exec-marks.js';
import { KILL_TREE_SCRIPT, wrapCommand } from '../../../src/commands/wrapper-protocol.js';

engineSuite('forged-marks');

const TTL = 3600;
/** Long enough for the copy to be made and the daemon listed before the kill, even under load. */
const TIMEOUT_MS = 5000;

describe.each([
  ['busybox', MINIMAL_IMAGE],
  ['Debian (dash)', PYTHON_IMAGE],
])('a copied mark hides nothing from a timeout (%s)', (_shell, image) => {
  test.concurrent(
    "a background process's mark, copied to a setsid daemon: the daemon dies with the command; the process runs on",
    async () => {
      await withManager(async (manager) => {
        const sb = await manager.start({ image, ttlSeconds: TTL });
        await sb.startProcess('exec sleep 1201');
        const victimMark = await waitForProcess(sb, 'sleep 1201');
        const pending = sb.exec(copier('sleep 1201', 'sleep 1202'), { timeoutMs: TIMEOUT_MS });
        // The daemon carries the background process's mark: the copy was made.
        expect(await waitForProcess(sb, 'sleep 1202')).toBe(victimMark);
        const r = await pending;
        expect(r).toMatchObject({ timedOut: true, exitCode: 124 });
        expect(r.stdout).toBe(`copied ${victimMark}\n`);
        expect(await running(sb, 'sleep 1202')).toBe(false);
        expect(await running(sb, 'sleep 1201')).toBe(true);
        expect(sb.listProcesses()[0]).toMatchObject({ status: 'running' });
      });
    },
    90_000,
  );

  test.concurrent(
    "the kept shell's mark, copied by one of its commands: the daemon dies; the shell keeps its folder and variables",
    async () => {
      await withManager(async (manager) => {
        const sb = await manager.start({ image, ttlSeconds: TTL });
        expect((await sb.exec('cd /tmp && export KEEP=yes && echo ok')).stdout).toBe('ok\n');
        const pending = sb.exec(copier('/bin/sh -c : kept-shell', 'sleep 1203'), { timeoutMs: TIMEOUT_MS });
        const copied = await waitForProcess(sb, 'sleep 1203');
        expect(copied).toMatch(/^GENAICODE_DOCKER_EXEC=./);
        const r = await pending;
        expect(r).toMatchObject({ timedOut: true, exitCode: 124 });
        expect(r.stdout).toBe(`copied ${copied}\n`);
        expect(await running(sb, 'sleep 1203')).toBe(false);
        expect((await sb.exec('echo "$PWD $KEEP"')).stdout).toBe('/tmp yes\n');
      });
    },
    90_000,
  );

  test.concurrent(
    "another running command's mark: the daemon dies with its own command; the other command runs on to its end",
    async () => {
      await withManager(async (manager) => {
        const sb = await manager.start({ image, ttlSeconds: TTL });
        // In the kept shell; the copier, beside it, in an exec of its own.
        const other = sb.exec('sleep 1204; echo other-done', { timeoutMs: 60_000 });
        const otherMark = await waitForProcess(sb, 'sleep 1204');
        const pending = sb.exec(copier('sleep 1204', 'sleep 1205'), { timeoutMs: TIMEOUT_MS });
        expect(await waitForProcess(sb, 'sleep 1205')).toBe(otherMark);
        expect(await pending).toMatchObject({ timedOut: true, exitCode: 124 });
        expect(await running(sb, 'sleep 1205')).toBe(false);
        expect(await running(sb, 'sleep 1204')).toBe(true);
        // The other command was never touched: it ends by itself when killed by us, not before.
        const pid = (await processes(sb)).find((p) => p.args === 'sleep 1204')!.pid;
        await sb.exec(['kill', String(pid)]);
        expect(await other).toMatchObject({ timedOut: false, stdout: 'other-done\n' });
      });
    },
    90_000,
  );

  test.concurrent(
    'a double-forked daemon that copies a mark, clears its environment but for it and re-execs itself: it dies too',
    async () => {
      await withManager(async (manager) => {
        const sb = await manager.start({ image, ttlSeconds: TTL });
        await sb.startProcess('exec sleep 1206');
        const victimMark = await waitForProcess(sb, 'sleep 1206');
        // The daemon's own program re-execs into another with only the copied mark in its environment.
        const daemon = `sh -c 'exec env -i "$0" sh -c "exec sleep 1207"' "$m"`;
        const pending = sb.exec(copier('sleep 1206', daemon), { timeoutMs: TIMEOUT_MS });
        expect(await waitForProcess(sb, 'sleep 1207')).toBe(victimMark);
        expect(await pending).toMatchObject({ timedOut: true, exitCode: 124 });
        expect(await running(sb, 'sleep 1207')).toBe(false);
        expect(await running(sb, 'sleep 1206')).toBe(true);
      });
    },
    90_000,
  );

  test.concurrent(
    'a command that lowers its own limits (and tries to raise them), copies a mark and daemonizes: still killed',
    async () => {
      await withManager(async (manager) => {
        const sb = await manager.start({ image, ttlSeconds: TTL });
        await sb.startProcess('exec sleep 1208');
        const victimMark = await waitForProcess(sb, 'sleep 1208');
        // Lowered below every mark, and an attempt to raise them back (refused without CAP_SYS_RESOURCE).
        const prelude = 'ulimit -m 1000; ulimit -t 100000; ulimit -t unlimited 2>/dev/null; ulimit -m unlimited 2>/dev/null';
        const pending = sb.exec(copier('sleep 1208', 'sleep 1209', prelude), { timeoutMs: TIMEOUT_MS });
        expect(await waitForProcess(sb, 'sleep 1209')).toBe(victimMark);
        const r = await pending;
        expect(r).toMatchObject({ timedOut: true, exitCode: 124 });
        expect(await running(sb, 'sleep 1209')).toBe(false);
        expect(await running(sb, 'sleep 1208')).toBe(true);
      });
    },
    90_000,
  );
});

test.concurrent(
  "stopProcess kills a child of the process that copied the kept shell's mark; the shell lives on",
  async () => {
    await withManager(async (manager) => {
      const sb = await manager.start({ image: MINIMAL_IMAGE, ttlSeconds: TTL });
      expect((await sb.exec('cd /tmp && export KEEP=yes && echo ok')).stdout).toBe('ok\n');
      const p = await sb.startProcess(copier('/bin/sh -c : kept-shell', 'sleep 1210'));
      const copied = await waitForProcess(sb, 'sleep 1210');
      expect(copied).toMatch(/^GENAICODE_DOCKER_EXEC=./);
      expect(await sb.stopProcess(p.processId)).toMatchObject({ status: 'stopped', verified: true });
      expect(await running(sb, 'sleep 1210')).toBe(false);
      expect((await sb.exec('echo "$PWD $KEEP"')).stdout).toBe('/tmp yes\n');
    });
  },
  90_000,
);

test.concurrent(
  "a sibling's timeout kills nothing legitimate: the kept shell's command, a background process and the shell run on",
  async () => {
    await withManager(async (manager) => {
      const sb = await manager.start({ image: MINIMAL_IMAGE, ttlSeconds: TTL });
      await sb.startProcess('exec sleep 1211');
      await waitForProcess(sb, 'sleep 1211');
      const inShell = sb.exec('sleep 1212; echo shell-done', { timeoutMs: 60_000 });
      await waitForProcess(sb, 'sleep 1212');
      // Beside it, in an exec of its own: a tree with a setsid daemon, killed by its timeout.
      const sibling = await sb.exec('(setsid sleep 1213 &); sleep 1000', { timeoutMs: 2500 });
      expect(sibling).toMatchObject({ timedOut: true, exitCode: 124 });
      expect(await running(sb, 'sleep 1213')).toBe(false);
      expect(await running(sb, 'sleep 1212')).toBe(true);
      expect(await running(sb, 'sleep 1211')).toBe(true);
      const pid = (await processes(sb)).find((p) => p.args === 'sleep 1212')!.pid;
      await sb.exec(['kill', String(pid)]);
      expect(await inShell).toMatchObject({ timedOut: false, stdout: 'shell-done\n' });
      expect(sb.listProcesses()[0]).toMatchObject({ status: 'running' });
    });
  },
  90_000,
);

test.concurrent(
  'the kill takes a shell that carries the mark but has not set its limits yet, and nothing else unmarked',
  async () => {
    await withManager(async (manager) => {
      const sb = await manager.start({ image: MINIMAL_IMAGE, ttlSeconds: TTL });
      const mark = new ExecMarks().next();
      // Execs of their own with the container's limits: one as a wrapper is before its `ulimit`
      // (the mark in its environment), one with another mark's text, one with none.
      await dockerOk(['exec', '-d', '-e', mark, sb.id, 'sleep', '1401']);
      await dockerOk(['exec', '-d', '-e', `${mark}0`, sb.id, 'sleep', '1402']);
      await dockerOk(['exec', '-d', sb.id, 'sleep', '1403']);
      await waitForProcess(sb, 'sleep 1401');
      await waitForProcess(sb, 'sleep 1402');
      await waitForProcess(sb, 'sleep 1403');
      const r = await sb.exec(['/bin/sh', '-c', KILL_TREE_SCRIPT, 'sh', mark, String(CPU_CEILING_S)]);
      expect(r).toMatchObject({ exitCode: 0, stdout: 'gone 1\n' });
      expect(await running(sb, 'sleep 1401')).toBe(false);
      expect(await running(sb, 'sleep 1402')).toBe(true);
      expect(await running(sb, 'sleep 1403')).toBe(true);
    });
  },
  90_000,
);

test.concurrent(
  'a shell whose limits are already below its mark runs nothing: exit 125 and a sentence, never an unmarked command',
  async () => {
    await withManager(async (manager) => {
      const sb = await manager.start({ image: MINIMAL_IMAGE, ttlSeconds: TTL });
      // The wrapper started where RLIMIT_CPU is 100 s: it cannot set a mark of 10^9 s.
      const r = await sb.exec(['/bin/sh', '-c', 'ulimit -t 100; exec env "$0" "$@"', new ExecMarks().next(), ...wrapCommand('echo ran')]);
      expect(r.exitCode).toBe(125);
      expect(r.stdout).toBe('');
      expect(r.stderr).toMatch(/limits on RSS or CPU time are below the exec's mark; the command was not run/);
    });
  },
  90_000,
);

test.concurrent(
  "a command's limits are its mark, far above any real use (ulimit -t never fires), in busybox and dash",
  async () => {
    await withManager(async (manager) => {
      for (const image of [MINIMAL_IMAGE, PYTHON_IMAGE]) {
        const sb = await manager.start({ image, ttlSeconds: TTL });
        for (const command of ['ulimit -H -t; ulimit -S -t; ulimit -H -m', "/bin/sh -c 'ulimit -H -t; ulimit -S -t; ulimit -H -m'"]) {
          const [hard, soft, rss] = (await sb.exec(command)).stdout.trim().split('\n').map(Number);
          expect(hard).toBe(soft);
          expect(hard).toBeGreaterThan(1_000_000_000);
          expect(hard).toBeLessThan(CPU_CEILING_S);
          expect(rss).toBeGreaterThan(2 ** 39);
        }
        // The background process's too (an exec of its own).
        const p = await sb.startProcess('ulimit -H -t; echo end-of-limits');
        expect(await sb.waitForOutput(p.processId, 'end-of-limits', 10_000)).toMatchObject({ found: true });
        expect(Number(sb.readProcessOutput(p.processId).output.split('\n')[0])).toBeGreaterThan(1_000_000_000);
        await sb.stop();
      }
    });
  },
  90_000,
);
