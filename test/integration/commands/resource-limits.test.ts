/**
 * Limits enforced by the engine and reported by the sandbox: the memory limit (OOM kill of
 * one command, the container survives), the process limit (a fork bomb), network isolation
 * and a read-only root filesystem.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import type { Sandbox } from '../../../src/index.js';
import { INIT_COMMAND, KEPT_SHELL_COMMAND, docker, PYTHON_IMAGE, withManager, engineSuite } from '../../support/engine.js';

engineSuite('resource-limits');

const MIB = 1024 ** 2;

test.concurrent(
  'OOM: a command allocating 200 MiB under a 32 MiB limit is oomKilled; the container lives on',
  async () => {
    await withManager(async (manager) => {
      const sb = await manager.start({ image: PYTHON_IMAGE, memoryBytes: 32 * MIB });
      // Touches every page (a bytes object filled with 'a'), so the memory is really used.
      const r = await sb.exec(['python3', '-c', "b = b'a' * (200 * 1024 * 1024); print(len(b))"], { timeoutMs: 60_000 });
      // Compared whole, so a failure shows how the command ended, its reason and its stderr.
      expect({ ...r, stderr: r.stderr.slice(-500) }).toEqual(
        expect.objectContaining({
          oomKilled: true,
          timedOut: false,
          canceled: false,
          exitCode: 137,
          stdout: '',
          reason: expect.stringMatching(/killed by the memory limit \(32 MiB\)/),
        }),
      );

      const after = await sb.exec(['python3', '-c', 'print("still here")']);
      expect(after).toMatchObject({ exitCode: 0, stdout: 'still here\n', oomKilled: false });
      // The next command that fails for another reason is not blamed on memory.
      const other = await sb.exec('exit 137');
      expect(other).toMatchObject({ exitCode: 137, oomKilled: false });
      const state = await docker(['inspect', '--format', '{{.State.Running}}', sb.id]);
      expect(state.stdout.trim()).toBe('true');
    });
  },
  90_000,
);

/** Command lines of the container's processes (the Debian image has no ps). */
async function commandLines(sb: Sandbox): Promise<string[]> {
  const list = await sb.exec([
    'python3',
    '-c',
    'import os\nfor p in os.listdir("/proc"):\n  if p.isdigit():\n    try: print(open(f"/proc/{p}/cmdline","rb").read().replace(b"\\0",b" ").replace(b"\\n",b" ").decode().strip())\n    except OSError: pass',
  ]);
  expect(list.exitCode).toBe(0);
  return list.stdout.split('\n').filter((l) => l.trim());
}

async function pidsCurrent(sb: Sandbox): Promise<number> {
  const r = await sb.exec(['cat', '/sys/fs/cgroup/pids/pids.current']);
  expect(r.exitCode).toBe(0);
  return Number(r.stdout.trim());
}

async function expectHostFine(): Promise<void> {
  const { stdout } = await promisify(execFile)('sh', ['-c', 'echo host-ok'], { timeout: 5000 });
  expect(stdout).toBe('host-ok\n');
  expect((await docker(['version', '--format', '{{.Server.Version}}'], { timeoutMs: 10_000 })).code).toBe(0);
}

// bash, not busybox ash, for the bombs that must last: ash exits on a failed fork, so a
// bomb there dies out by itself within a second; bash retries its forks and keeps going.
test.concurrent(
  'fork bomb: stopped by the pids limit and the timeout; the host is fine; the container answers after',
  async () => {
    await withManager(async (manager) => {
      const sb = await manager.start({ image: PYTHON_IMAGE, pids: 64 });
      // The bomb, then the shell replaces itself (no fork needed) so the command stays running.
      const r = await sb.exec(['bash', '-c', ':(){ :|:& };:; exec sleep 600'], { timeoutMs: 4000 });
      expect(r).toMatchObject({ timedOut: true, pidsLimitHit: true, exitCode: 124, canceled: false });
      expect(r.reason).toMatch(/timed out after 4000 ms/);
      expect(r.reason).toMatch(/process limit \(64 processes\)/);
      expect(r.stderr).toMatch(/fork/);
      expect(r.durationMs).toBeLessThan(30_000);

      await expectHostFine();
      expect(await sb.exec('echo ok')).toMatchObject({ exitCode: 0, stdout: 'ok\n' });
      const cmds = await commandLines(sb);
      expect(cmds.filter((c) => c.includes(':|:') || c.includes('sleep 600'))).toEqual([]);
      // Only init, the keep-alive sleep, the kept shell, and the python lister itself with its exec wrapper are left.
      const own = cmds.filter((c) => !KEPT_SHELL_COMMAND.test(c));
      expect(own.filter((c) => !INIT_COMMAND.test(c) && !/^sleep \d+$|^python3 -c |^\/bin\/sh -c counters\(\) \{/.test(c))).toEqual([]);
      expect(own.length).toBe(4);
      expect(await pidsCurrent(sb)).toBeLessThan(8);
    });
  },
  90_000,
);

test.concurrent(
  'classic fork bomb whose own shell exits at once: stopped with its shell, and not left running in the container',
  async () => {
    await withManager(async (manager) => {
      const sb = await manager.start({ image: PYTHON_IMAGE, pids: 64 });
      const r = await sb.exec(['bash', '-c', ':(){ :|:& };:'], { timeoutMs: 4000 });
      // Usually the shell exits at once (0) and the wrapper stops what it left running. Under load
      // bash itself can sit in its fork-retry loop (EAGAIN at the limit) past the timeout, and then
      // the tree is killed; or its own second fork is refused and it gives up with an error. Each
      // way the result says which, and nothing may be left behind.
      const how = r.timedOut ? 'timed out' : r.exitCode === 0 ? 'exited' : 'gave up forking';
      const seen = {
        'timed out': { exitCode: r.exitCode, reason: /timed out/.test(r.reason ?? '') },
        exited: { exitCode: r.exitCode },
        'gave up forking': { forkRefused: /fork: .*Resource temporarily unavailable/.test(r.stderr), pidsLimitHit: r.pidsLimitHit },
      }[how];
      expect({ how, seen }).toEqual({
        how,
        seen: {
          'timed out': { exitCode: 124, reason: true },
          exited: { exitCode: 0 },
          'gave up forking': { forkRefused: true, pidsLimitHit: true },
        }[how],
      });
      // Whether the bomb reached the limit in those milliseconds varies; the report must match the counter.
      if (r.pidsLimitHit) expect(r.reason).toMatch(/process limit \(64 processes\)/);
      else expect(r.reason ?? '').not.toMatch(/process limit/);
      await expectHostFine();
      // Whatever the result says, the bomb must not outlive the command that started it.
      expect(await pidsCurrent(sb)).toBeLessThan(8);
      expect(await sb.exec('echo ok')).toMatchObject({ exitCode: 0, stdout: 'ok\n' });
      expect((await commandLines(sb)).filter((c) => c.includes(':|:'))).toEqual([]);
    });
  },
  90_000,
);

test.concurrent(
  'a busybox fork bomb that dies out by itself still reports pidsLimitHit',
  async () => {
    await withManager(async (manager) => {
      const sb = await manager.start({ pids: 64 });
      const r = await sb.exec('b() { while :; do b & done; }; b', { timeoutMs: 10_000 });
      expect(r.timedOut).toBe(false);
      expect(r.stderr).toMatch(/can't fork/);
      expect(r.pidsLimitHit).toBe(true);
      expect(r.reason).toMatch(/process limit \(64 processes\)/);
      expect(await sb.exec('echo ok')).toMatchObject({ exitCode: 0, stdout: 'ok\n' });
    });
  },
  60_000,
);

describe('network', () => {
  const interfaces = (devText: string) =>
    devText
      .split('\n')
      .slice(2)
      .map((l) => l.split(':')[0]!.trim())
      .filter(Boolean)
      .sort();

  test.concurrent(
    "'none' (the default): only the loopback interface",
    async () => {
      await withManager(async (manager, config) => {
        expect(config.network).toBe('none');
        const sb = await manager.start();
        const r = await sb.exec('cat /proc/net/dev');
        expect(r.exitCode).toBe(0);
        expect(interfaces(r.stdout)).toEqual(['lo']);
      });
    },
    60_000,
  );

  test.concurrent(
    "'bridge' (start option): loopback and eth0",
    async () => {
      await withManager(async (manager) => {
        const sb = await manager.start({ network: 'bridge' });
        const r = await sb.exec('cat /proc/net/dev');
        expect(interfaces(r.stdout)).toEqual(['eth0', 'lo']);
        const mode = await docker(['inspect', '--format', '{{.HostConfig.NetworkMode}}', sb.id]);
        expect(mode.stdout.trim()).toBe('bridge');
      });
    },
    60_000,
  );

  test.concurrent(
    "'bridge' from the configuration, overridden to 'none' by a start option",
    async () => {
      await withManager(
        async (manager) => {
          const [bridged, isolated] = await Promise.all([manager.start(), manager.start({ network: 'none' })]);
          const [a, b] = await Promise.all([bridged.exec('cat /proc/net/dev'), isolated.exec('cat /proc/net/dev')]);
          expect(interfaces(a.stdout)).toEqual(['eth0', 'lo']);
          expect(interfaces(b.stdout)).toEqual(['lo']);
        },
        { overrides: { network: 'bridge' } },
      );
    },
    60_000,
  );
});

describe('read-only root', () => {
  test.concurrent(
    'writing to /etc fails with "Read-only file system"; /tmp and the workdir are writable',
    async () => {
      await withManager(async (manager) => {
        const sb = await manager.start({ readOnlyRoot: true });
        const etc = await sb.exec('echo x > /etc/probe');
        expect(etc.exitCode).not.toBe(0);
        expect(etc.stderr).toMatch(/Read-only file system/);
        const bin = await sb.exec(['touch', '/bin/probe']);
        expect(bin.exitCode).not.toBe(0);
        expect(bin.stderr).toMatch(/Read-only file system/);

        const tmp = await sb.exec('echo t > /tmp/probe && cat /tmp/probe');
        expect(tmp).toMatchObject({ exitCode: 0, stdout: 't\n' });
        const work = await sb.exec('pwd && echo w > probe && cat ./probe');
        expect(work).toMatchObject({ exitCode: 0, stdout: '/workspace\nw\n' });
        const ro = await docker(['inspect', '--format', '{{.HostConfig.ReadonlyRootfs}}', sb.id]);
        expect(ro.stdout.trim()).toBe('true');
      });
    },
    60_000,
  );

  test.concurrent(
    'from the configuration, with a custom workdir that is writable',
    async () => {
      await withManager(
        async (manager) => {
          const sb = await manager.start({ workdir: '/project' });
          expect((await sb.exec('echo x > /etc/probe')).stderr).toMatch(/Read-only file system/);
          expect(await sb.exec('pwd; echo y > f && cat f')).toMatchObject({ exitCode: 0, stdout: '/project\ny\n' });
        },
        { overrides: { readOnlyRoot: true } },
      );
    },
    60_000,
  );

  test.concurrent(
    'off by default: the root filesystem is writable',
    async () => {
      await withManager(async (manager) => {
        const sb = await manager.start();
        expect(await sb.exec('echo x > /etc/probe && cat /etc/probe')).toMatchObject({ exitCode: 0, stdout: 'x\n' });
      });
    },
    60_000,
  );
});

/** Allocates 200 MiB under the 32 MiB limit below: killed by the kernel's OOM killer. */
const ALLOCATE = `python3 -c "b = b'a' * (200 * 1024 * 1024)"`;

/**
 * A daemon (setsid: it outlives the command's group) that writes to stderr a second later;
 * the command waits until setsid has run (before that the daemon is still in its group).
 */
const LATER = (write: string): string => `setsid sh -c "sleep 1; ${write.replace(/"/g, '\\"')} >&2" & sleep 0.3;`;

/**
 * A process the command leaves behind writes to stderr after the wrapper's trailer: a
 * trailer of its own making, or bytes that hide the real one. The limit flags come from
 * the container's counters all the same.
 */
test.concurrent.each([
  ['a made-up trailer claiming no hit hides a real OOM kill', `${LATER("printf '\\036%s\\036' 0:0")} ${ALLOCATE}`, true],
  ['bytes after the trailer hide a real OOM kill (the command exits 0)', `${LATER('echo late')} ${ALLOCATE}; exit 0`, true],
  ['a made-up trailer claims hits that did not happen', `${LATER("printf '\\036%s\\036' 9:9")} exit 3`, false],
])(
  '%s: the answer tells the truth',
  async (_what, command, hit) => {
    await withManager(async (manager) => {
      const sb = await manager.start({ image: PYTHON_IMAGE, memoryBytes: 32 * MIB });
      const r = await sb.exec(command, { timeoutMs: 60_000 });
      expect(r).toMatchObject({ oomKilled: hit, pidsLimitHit: false, timedOut: false });
      if (hit) expect(r.reason).toMatch(/memory limit/);
      else expect(r.reason ?? '').not.toMatch(/memory limit|process limit/);
    });
  },
  90_000,
);
