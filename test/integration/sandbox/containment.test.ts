/**
 * Containment against a hostile command, on a real engine: what a command inside the
 * container does to the guarantees about it (its expiry, the limit flags of its result).
 */
import { readFileSync } from 'node:fs';
import { PYTHON_IMAGE, docker, dockerOk, engineSuite, inspectContainer, listManaged, waitFor, withManager } from '../../support/engine.js';
import { LABEL } from '../../../src/index.js';
import { EXPIRY_GRACE_MS } from '../../../src/sandbox/sweep.js';

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
  const MiB = 1024 ** 2;
  /** The writable layer's size as the engine counts it (SizeRw). */
  const layerBytes = async (id: string) => Number((await dockerOk(['inspect', '--size', '-f', '{{.SizeRw}}', id])).trim());

  test.concurrent(
    'writing past limits.disk stops the command and names it; writing under it does not; the container stays usable',
    async () => {
      await withManager(
        async (manager) => {
          const sb = await manager.start();
          const under = await sb.exec('dd if=/dev/zero of=/under bs=1M count=40 2>/dev/null; echo wrote');
          expect(under).toMatchObject({ exitCode: 0, diskLimitHit: false, stdout: 'wrote\n' });
          // Enforced by the engine where the driver has quotas (then dd fails with ENOSPC), else
          // measured: many files, each under the limit, together over it.
          const over = await sb.exec(
            'i=0; while [ $i -lt 12 ]; do dd if=/dev/zero of=/over$i bs=1M count=50 2>&1; i=$((i+1)); done; sleep 5; echo finished',
            { timeoutMs: 60_000 },
          );
          expect(['engine', 'measured']).toContain(manager.diskEnforcement);
          if (manager.diskEnforcement === 'measured') {
            expect(over).toMatchObject({ diskLimitHit: true, exitCode: 137, timedOut: false });
            expect(over.reason).toMatch(/wrote past the disk limit: .* over 128 MiB \(limits\.disk\)/);
            expect(over.stdout).not.toContain('finished');
          } else {
            expect(over.stdout).toMatch(/No space left on device/);
          }
          expect((await sb.exec('rm -f /over* /under; echo ok')).stdout).toBe('ok\n');
        },
        { overrides: { limits: { disk: '128m' } } },
      );
    },
    90_000,
  );

  // One file, however fast it is written, never passes the limit: the largest file a process
  // may write is the limit itself (no watch has to win a race).
  test.concurrent.each([
    ['dd at full speed', 'dd if=/dev/zero of=/fast bs=4M count=128'],
    ['fallocate', 'fallocate -l 512M /fast'],
    ['a sparse file extended past it', 'truncate -s 600M /fast'],
    ['python writing one file', "python3 -c \"f=open('/fast','wb')\nfor i in range(512): f.write(bytes(1048576))\""],
  ])(
    '%s: refused at the limit; the layer stays under it',
    async (_what, writer) => {
      await withManager(
        async (manager) => {
          const sb = await manager.start({ image: PYTHON_IMAGE });
          const r = await sb.exec(`${writer}; echo "exit $?"; ls -l /fast`, { timeoutMs: 60_000 });
          if (manager.diskEnforcement !== 'measured') return;
          expect(r.stdout).not.toMatch(/^exit 0$/m);
          expect(await layerBytes(sb.id)).toBeLessThanOrEqual(128 * MiB + 64 * 1024);
          expect(await sb.exec('rm -f /fast; echo ok')).toMatchObject({ stdout: 'ok\n', diskLimitHit: false });
        },
        { overrides: { limits: { disk: '128m' } } },
      );
    },
    90_000,
  );

  // A writer left running by a command that has returned (started with setsid, as a service
  // meant to outlive its command is): the limit holds between commands.
  test.concurrent.each([
    [
      'a daemon writing 16 MiB files',
      "setsid sh -c 'i=0; while :; do dd if=/dev/zero of=/bg$i bs=1M count=16 2>/dev/null; i=$((i+1)); sleep 0.2; done' >/dev/null 2>&1 < /dev/null &",
    ],
    [
      'a daemon that starts writing late, fast',
      "setsid sh -c 'sleep 3; i=0; while :; do dd if=/dev/zero of=/bg$i bs=1M count=32 2>/dev/null; i=$((i+1)); done' >/dev/null 2>&1 < /dev/null &",
    ],
    [
      'a daemon writing many small files',
      "setsid sh -c 'sleep 2; i=0; while :; do head -c 1048576 /dev/zero > /bg$i; i=$((i+1)); done' >/dev/null 2>&1 < /dev/null &",
    ],
    [
      'a double fork',
      'sh -c \'setsid sh -c "i=0; while :; do dd if=/dev/zero of=/bg\\$i bs=1M count=8 2>/dev/null; i=\\$((i+1)); sleep 0.1; done" >/dev/null 2>&1 < /dev/null &\' &',
    ],
  ])(
    '%s: stopped when the layer passes the limit, and the next answer says why',
    async (_what, start) => {
      await withManager(
        async (manager) => {
          const sb = await manager.start();
          // A moment for the daemon to leave the command's group: the command's end stops what is still in it.
          const started = await sb.exec(`${start} sleep 1; echo started`);
          expect(started).toMatchObject({ exitCode: 0, stdout: 'started\n', diskLimitHit: false });
          if (manager.diskEnforcement !== 'measured') return;
          // No command runs now: the writer is found and stopped all the same.
          await waitFor('the layer to pass the limit', async () => ((await layerBytes(sb.id)) > 128 * MiB ? true : undefined), 30_000, 100);
          // Nothing is left but the container's init and its keep-alive.
          const processes = async () => (await dockerOk(['top', sb.id, '-o', 'pid,args'])).trim().split('\n').slice(1);
          // (The kill's own helper exec is seen for a moment too: waited out, not counted.)
          const onlyKeepAlive = /^\s*\d+\s+\/sbin\/docker-init -- sleep \d+\n\s*\d+\s+sleep \d+$/;
          let seen = '';
          await waitFor(
            'the writer to be stopped',
            async () => {
              seen = (await processes()).join('\n');
              return onlyKeepAlive.test(seen) ? true : undefined;
            },
            30_000,
            250,
          ).catch(() => undefined);
          expect(seen).toMatch(onlyKeepAlive);
          // Stopped soon after the limit, where unwatched it writes until the disk is full: what
          // passes it is what the writer writes between two looks (about a second), which at a
          // disk's full speed can be a gigabyte or more; the bound proves it was stopped, not a speed.
          const used = await layerBytes(sb.id);
          expect(used).toBeGreaterThan(128 * MiB);
          expect(used).toBeLessThan(4096 * MiB);
          const next = await sb.exec('echo next');
          expect(next).toMatchObject({ stdout: 'next\n', diskLimitHit: true });
          expect(next.reason).toMatch(
            /between commands, the container's own files passed the disk limit .* over 128 MiB, limits\.disk\): the \d+ processes left running were killed/,
          );
          // Told once: the answer after that is about its own command.
          expect(await sb.exec('rm -f /bg*; echo ok')).toMatchObject({ stdout: 'ok\n', diskLimitHit: false });
        },
        { overrides: { limits: { disk: '128m' } } },
      );
    },
    90_000,
  );
});
