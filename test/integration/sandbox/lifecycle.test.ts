/**
 * Container lifecycle against a real engine: idempotent stop (twice, concurrently, after
 * the container was removed behind our back), cleanup of a container that was created but
 * did not start, and the dead-man switch (the container ends and is removed by itself at
 * its expiry, with nothing on the host doing it).
 */
import { spawn } from 'node:child_process';
import { chmodSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DockerEngine } from '../../../src/engine/docker-engine.js';
import { LABEL, SandboxError } from '../../../src/index.js';
import {
  dockerOk,
  inspectContainer,
  listManaged,
  RecordingEngine,
  sleep,
  waitFor,
  withManager,
  engineSuite,
} from '../../support/engine.js';
import { tempDir } from '../../support/temp-dirs.js';

engineSuite('lifecycle');

describe('stop() is idempotent', () => {
  test.concurrent(
    'twice in a row, and twice at once: no error, container gone, exec then fails cleanly',
    async () => {
      await withManager(async (manager) => {
        const [a, b] = await Promise.all([manager.start(), manager.start()]);
        await a.stop();
        await a.stop();
        await Promise.all([b.stop(), b.stop(), b[Symbol.asyncDispose]()]);
        for (const sb of [a, b]) {
          expect(sb.isStopped).toBe(true);
          expect(await inspectContainer(sb.id)).toBeUndefined();
        }
        expect(manager.list()).toEqual([]);
        await expect(a.exec('echo hi')).rejects.toMatchObject({ name: 'SandboxError', code: 'CONTAINER_NOT_FOUND' });
      });
    },
    60_000,
  );

  test.concurrent(
    'after the container was removed behind our back (docker rm -f): no error',
    async () => {
      await withManager(async (manager) => {
        const sb = await manager.start();
        expect((await sb.exec('echo alive')).stdout).toBe('alive\n');
        await dockerOk(['rm', '-f', sb.id]);
        expect(await inspectContainer(sb.id)).toBeUndefined();
        // A command now reports the container as gone, as a SandboxError, not a raw engine error.
        // (Where the engine ends the kept shell's stream only after the removal returned, as Podman
        // can under load, the command was sent to the shell first: its answer says the container was
        // removed under it, and the next command is refused.)
        let caught: unknown;
        let answer: Awaited<ReturnType<typeof sb.exec>> | undefined;
        try {
          answer = await sb.exec('echo hi');
          caught = await sb.exec('echo again').catch((e: unknown) => e);
        } catch (e) {
          caught = e;
        }
        if (answer) expect(answer.reason).toMatch(/^the container (was removed|stopped) while the command ran/);
        expect(caught).toBeInstanceOf(SandboxError);
        expect((caught as SandboxError).code).toBe('CONTAINER_NOT_FOUND');
        await expect(sb.stop()).resolves.toBeUndefined();
        await expect(sb.stop()).resolves.toBeUndefined();
        expect(manager.list()).toEqual([]);
      });
    },
    60_000,
  );

  test.concurrent(
    'after the container was stopped behind our back (docker stop): removed, no error',
    async () => {
      await withManager(async (manager) => {
        const sb = await manager.start();
        await dockerOk(['stop', '-t', '0', sb.id]);
        await expect(sb.stop()).resolves.toBeUndefined();
        await waitFor('the container to be gone', async () => ((await inspectContainer(sb.id)) ? undefined : true), 10_000);
        expect(manager.list()).toEqual([]);
      });
    },
    60_000,
  );

  test.concurrent(
    'stopAll stops every sandbox of the manager and only those',
    async () => {
      await withManager(async (other) => {
        const keep = await other.start();
        await withManager(async (manager) => {
          await Promise.all([manager.start(), manager.start(), manager.start()]);
          expect((await listManaged({ [LABEL.session]: manager.sessionId })).length).toBe(3);
          await manager.stopAll();
          expect(await listManaged({ [LABEL.session]: manager.sessionId })).toEqual([]);
          expect(manager.list()).toEqual([]);
        });
        expect((await inspectContainer(keep.id))?.State.Running).toBe(true);
      });
    },
    60_000,
  );
});

describe('a container that was created but did not start is removed', () => {
  test.concurrent(
    'the engine fails the start (a wrapper around the real engine)',
    async () => {
      const engine = new RecordingEngine();
      engine.failStartWith = new SandboxError('CONTAINER_START_FAILED', 'injected: start failed');
      let createdIds: string[] = [];
      await withManager(
        async (manager) => {
          await expect(manager.start()).rejects.toMatchObject({ code: 'CONTAINER_START_FAILED', message: 'injected: start failed' });
          expect(engine.calls).toContain('createContainer');
          expect(engine.calls.indexOf('removeContainer')).toBeGreaterThan(engine.calls.indexOf('startContainer'));
          expect(manager.list()).toEqual([]);
          createdIds = (await listManaged({ [LABEL.session]: manager.sessionId })).map((c) => c.id);
        },
        { engine },
      );
      expect(createdIds).toEqual([]);
    },
    60_000,
  );

  test.concurrent(
    'a real start failure (a file bind-mounted over /bin): CONTAINER_START_FAILED, nothing left',
    async () => {
      const dir = tempDir();
      chmodSync(dir, 0o755); // a rootless engine runs as another user here: it reads the folder as anyone may
      const file = join(dir, 'not-a-dir');
      writeFileSync(file, 'x');
      const engine = new RecordingEngine();
      await withManager(
        async (manager) => {
          let caught: unknown;
          try {
            await manager.start({ mounts: [{ hostPath: file, containerPath: '/bin' }] });
          } catch (e) {
            caught = e;
          }
          expect(caught).toMatchObject({ code: 'CONTAINER_START_FAILED' });
          expect(engine.calls).toEqual(expect.arrayContaining(['createContainer', 'startContainer']));
          expect(manager.list()).toEqual([]);
          expect(await listManaged({ [LABEL.session]: manager.sessionId })).toEqual([]);
        },
        { engine, overrides: { mountAllow: [{ hostPath: dir }] } },
      );
    },
    60_000,
  );
});

test.concurrent(
  'dead-man switch: with ttlSeconds 10 the container ends and is removed by itself',
  async () => {
    await withManager(async (manager) => {
      const sb = await manager.start({ ttlSeconds: 10 });
      // Watch the engine's events for this container: how it ended tells who ended it.
      const events: Array<{ Action?: string; status?: string; timeNano?: number; Actor?: { Attributes?: Record<string, string> } }> = [];
      const watcher = spawn('docker', ['events', '--filter', `container=${sb.id}`, '--format', '{{json .}}'], {
        stdio: ['ignore', 'pipe', 'ignore'],
      });
      let buffered = '';
      watcher.stdout.on('data', (d: Buffer) => {
        buffered += d.toString();
        const lines = buffered.split('\n');
        buffered = lines.pop() ?? '';
        for (const l of lines) if (l.trim()) events.push(JSON.parse(l) as (typeof events)[number]);
      });
      try {
        const info = await inspectContainer(sb.id);
        expect(info?.Config.Cmd).toEqual(['10']);
        expect(info?.HostConfig.AutoRemove).toBe(true);
        // Times are from the engine's start of the container (the same host's clock), not from
        // when start() returned, which load can delay by seconds.
        const startedAt = Date.parse(info?.State.StartedAt ?? '');
        // Still there well before the expiry...
        await sleep(Math.max(0, startedAt + 5000 - Date.now()));
        expect((await inspectContainer(sb.id))?.State.Running).toBe(true);
        // ...gone a little after it, with no help from this process.
        await waitFor('the container to remove itself', async () => ((await inspectContainer(sb.id)) ? undefined : true), 20_000, 250);
        expect(Date.now() - startedAt).toBeGreaterThan(9_000);
        const action = (e: (typeof events)[number]) => e.Action ?? e.status;
        // The events watcher may get the last ones after the container is gone.
        await waitFor(
          'the removal event',
          async () => (events.some((e) => ['destroy', 'remove'].includes(action(e) ?? '')) ? true : undefined),
          10_000,
        );
        const actions = events.map(action);
        expect(actions).toContain('die');
        expect(actions.some((a) => a === 'destroy' || a === 'remove')).toBe(true); // Docker: destroy; Podman: remove
        expect(actions).not.toContain('kill'); // nobody killed it: its keep-alive ended
        const die = events.find((e) => (e.Action ?? e.status) === 'die');
        expect(die?.Actor?.Attributes?.exitCode).toBe('0');
        // The engine's own clock: it ended 10 s after it started (not this process's view, which load delays).
        const diedAfterMs = (die?.timeNano ?? 0) / 1e6 - startedAt;
        // At its expiry, not long after it; a rootless engine (its conmon, a user's runtime) reports the end seconds late.
        expect(diedAfterMs).toBeGreaterThanOrEqual(9_900);
        expect(diedAfterMs).toBeLessThan((await new DockerEngine().info()).rootless ? 30_000 : 12_000);
      } finally {
        watcher.kill();
      }
      await expect(sb.exec('echo late')).rejects.toMatchObject({ code: 'CONTAINER_NOT_FOUND' });
      await expect(sb.stop()).resolves.toBeUndefined();
      expect(manager.list()).toEqual([]);
    });
  },
  60_000,
);

test.concurrent('ttlSeconds below the minimum is rejected before anything is created', async () => {
  const engine = new RecordingEngine();
  await withManager(
    async (manager) => {
      await expect(manager.start({ ttlSeconds: 5 })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
      expect(engine.calls).toEqual([]);
    },
    { engine },
  );
});
