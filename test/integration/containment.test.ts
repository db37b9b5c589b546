/**
 * Containment against a hostile command, on a real engine: what a command inside the
 * container does to the guarantees about it (its expiry, the limit flags of its result).
 */
import { readFileSync } from 'node:fs';
import { PYTHON_IMAGE, docker, dockerOk, engineSuite, inspectContainer, listManaged, waitFor, withManager } from '../support/engine.js';
import { LABEL } from '../../src/index.js';
import { EXPIRY_GRACE_MS } from '../../src/sandbox/sweep.js';

engineSuite('containment');

/** Stops (SIGSTOP) every `sleep` in the container but the command's own: the keep-alive. */
const FREEZE_KEEPALIVE =
  // (cmdline has no final newline, so read reports end of file: its value is still set.)
  'for d in /proc/[0-9]*; do c=""; read -r c < "$d/cmdline" 2>/dev/null; case "$c" in sleep*) kill -s STOP "${d#/proc/}" && echo "stopped ${d#/proc/}";; esac; done';

describe('the expiry holds whatever a command does', () => {
  test.concurrent.each([
    ['SIGSTOP', FREEZE_KEEPALIVE],
    ['SIGSTOP, then the command keeps running', `${FREEZE_KEEPALIVE}; sleep 1`],
  ])(
    'the keep-alive frozen (%s): the container is still removed at its expiry',
    async (_what, cmd) => {
      await withManager(
        async (manager) => {
          const sb = await manager.start({ ttlSeconds: 10 });
          const r = await sb.exec(cmd);
          expect(r.stdout).toMatch(/stopped \d+/);
          // Removed at its expiry (10 s) plus the grace it is left to end by itself (EXPIRY_GRACE_MS, 30 s).
          await waitFor(
            'the container to be gone',
            async () => ((await inspectContainer(sb.id)) === undefined ? true : undefined),
            55_000,
            250,
          );
          expect(Date.now()).toBeLessThan(sb.info.expiresAt.getTime() + EXPIRY_GRACE_MS + 10_000);
          expect(await listManaged({ [LABEL.session]: manager.sessionId })).toEqual([]);
        },
        { overrides: { ttlSeconds: 10 } },
      );
    },
    90_000,
  );
});

describe('the limit flags cannot be forged or hidden from inside', () => {
  // cgroup v1: /sys/fs/cgroup is a writable tmpfs where v2-named files can be planted.
  const PLANT = (oom: number, pids: number) =>
    `printf 'oom_kill ${oom}\\n' > /sys/fs/cgroup/memory.events 2>/dev/null; printf 'max ${pids}\\n' > /sys/fs/cgroup/pids.events 2>/dev/null; true`;

  test.concurrent(
    'planted counters do not fake an OOM kill or a process-limit hit on a command that did neither',
    async () => {
      await withManager(async (manager) => {
        const sb = await manager.start();
        const r = await sb.exec(`${PLANT(99, 99)}; exit 3`);
        expect(r).toMatchObject({ exitCode: 3, oomKilled: false, pidsLimitHit: false });
        // And on the next command, after they are in place.
        const next = await sb.exec('exit 5');
        expect(next).toMatchObject({ exitCode: 5, oomKilled: false, pidsLimitHit: false });
      });
    },
    60_000,
  );

  test.concurrent(
    'planted zero counters do not hide a real OOM kill',
    async () => {
      await withManager(
        async (manager) => {
          const sb = await manager.start({ image: 'genaicode-docker/sandbox-python:latest' });
          await sb.exec(PLANT(0, 0));
          const r = await sb.exec(`${PLANT(0, 0)}; python3 -c "b = bytearray(200 * 1024 * 1024); print(len(b))"`);
          expect(r.exitCode).not.toBe(0);
          expect(r.oomKilled).toBe(true);
        },
        { overrides: { limits: { memory: '64m' } } },
      );
    },
    90_000,
  );
});

describe('a container stopped from outside while a command runs is named, not an ordinary exit 137', () => {
  test.concurrent.each([
    ['docker kill', ['kill']],
    ['docker stop', ['stop', '-t', '1']],
    ['docker rm -f', ['rm', '-f']],
  ])(
    '%s: the answer names it and keeps the partial log; the next command is CONTAINER_NOT_FOUND',
    async (_what, args) => {
      await withManager(async (manager) => {
        const sb = await manager.start();
        const running = sb.exec('echo before; sleep 30; echo after', { timeoutMs: 25_000 });
        await waitFor(
          'the command to start',
          async () => ((await docker(['top', sb.id])).stdout.includes('sleep 30') ? true : undefined),
          10_000,
          100,
        );
        await dockerOk([...args, sb.id]);
        const r = await running;
        expect(r).toMatchObject({ exitCode: 137, timedOut: false, canceled: false, stdout: 'before\n' });
        expect(r.reason).toMatch(/while the command ran .*from outside/);
        expect(readFileSync(r.logPath, 'utf8')).toBe('before\n');
        await expect(sb.exec('true')).rejects.toMatchObject({ code: 'CONTAINER_NOT_FOUND' });
      });
    },
    60_000,
  );
});

describe('the disk limit, on this machine\u2019s storage driver', () => {
  test.concurrent(
    'writing past limits.disk stops the command and names it; writing under it does not; the container stays usable',
    async () => {
      await withManager(
        async (manager) => {
          const sb = await manager.start();
          const under = await sb.exec('dd if=/dev/zero of=/under bs=1M count=40 2>/dev/null; echo wrote');
          expect(under).toMatchObject({ exitCode: 0, diskLimitHit: false, stdout: 'wrote\n' });
          // Enforced by the engine where the driver has quotas (then dd fails with ENOSPC), else measured.
          const over = await sb.exec('dd if=/dev/zero of=/over bs=1M count=600 2>&1; sleep 5; echo finished', { timeoutMs: 60_000 });
          expect(['engine', 'measured']).toContain(manager.diskEnforcement);
          if (manager.diskEnforcement === 'measured') {
            expect(over).toMatchObject({ diskLimitHit: true, exitCode: 137, timedOut: false });
            expect(over.reason).toMatch(/wrote past the disk limit: .* over 128 MiB \(limits\.disk\)/);
            expect(over.stdout).not.toContain('finished');
          } else {
            expect(over.stdout).toMatch(/No space left on device/);
          }
          expect((await sb.exec('rm -f /over /under; echo ok')).stdout).toBe('ok\n');
        },
        { overrides: { limits: { disk: '128m' } } },
      );
    },
    90_000,
  );

  test.concurrent(
    'a write faster than the first measurement (fallocate, then exit) is still found: measured at the command\u2019s end',
    async () => {
      await withManager(
        async (manager) => {
          const sb = await manager.start({ image: PYTHON_IMAGE });
          const r = await sb.exec('fallocate -l 300M /fast && echo done', { timeoutMs: 60_000 });
          if (manager.diskEnforcement === 'measured') {
            expect(r).toMatchObject({ exitCode: 0, diskLimitHit: true, stdout: 'done\n', timedOut: false });
            expect(r.reason).toMatch(/wrote past the disk limit: .* over 128 MiB \(limits\.disk\): remove files/);
            expect(r.reason).not.toMatch(/killed/);
          } else {
            expect(r.stderr).toMatch(/No space left on device/);
          }
          // Under the limit again once the file is gone.
          expect(await sb.exec('rm -f /fast; echo ok')).toMatchObject({ stdout: 'ok\n', diskLimitHit: false });
        },
        { overrides: { limits: { disk: '128m' } } },
      );
    },
    90_000,
  );
});
