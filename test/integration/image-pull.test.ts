/**
 * Real image pulls from a registry this file starts on loopback (nothing leaves the
 * machine): pull progress, a sandbox from the pulled image, missing tags and repositories,
 * and pulling turned off.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { LABEL, type PullProgress } from '../../src/index.js';
import {
  docker,
  dockerOk,
  expectNoContainersLeft,
  fileSession,
  listManaged,
  MINIMAL_IMAGE,
  RecordingEngine,
  requireEngine,
  sleep,
  withManager,
} from '../support/engine.js';
import { tempDir, removeTempDirs } from '../support/temp-dirs.js';

fileSession('image-pull');

let registry: ChildProcess | undefined;
let registryLog = '';
let port = 0;
const localTags: string[] = [];

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const address = srv.address();
      const p = typeof address === 'object' && address ? address.port : 0;
      srv.close(() => resolve(p));
    });
  });
}

async function startRegistry(): Promise<void> {
  const dir = tempDir('gcd-registry-');
  port = await freePort();
  const config = join(dir, 'config.yml');
  writeFileSync(
    config,
    [
      'version: 0.1',
      'log:',
      '  level: warn',
      'storage:',
      '  filesystem:',
      `    rootdirectory: ${join(dir, 'data')}`,
      '  delete:',
      '    enabled: true',
      'http:',
      `  addr: 127.0.0.1:${port}`,
      '',
    ].join('\n'),
  );
  registry = spawn('docker-registry', ['serve', config], { stdio: ['ignore', 'pipe', 'pipe'] });
  registry.stdout?.on('data', (d: Buffer) => (registryLog += d.toString()));
  registry.stderr?.on('data', (d: Buffer) => (registryLog += d.toString()));
  const spawnError = new Promise<never>((_, reject) =>
    registry?.once('error', (e) =>
      reject(new Error(`docker-registry could not start (install the Debian package docker-registry): ${e.message}`)),
    ),
  );
  const ready = (async () => {
    for (let i = 0; i < 100; i++) {
      try {
        const res = await fetch(`http://127.0.0.1:${port}/v2/`, { headers: { connection: 'close' } });
        if (res.status === 200) return;
      } catch {
        // not listening yet
      }
      if (registry?.exitCode !== null) throw new Error(`docker-registry exited: ${registryLog}`);
      await sleep(100);
    }
    throw new Error(`docker-registry did not answer on 127.0.0.1:${port}: ${registryLog}`);
  })();
  await Promise.race([ready, spawnError]);
}

// Pushes one at a time: the registry's filesystem storage can answer 500 when two pushes
// upload the same layer at once.
let pushQueue: Promise<unknown> = Promise.resolve();

/** Pushes the minimal image under `repo:tag` to the loopback registry, then drops the local tag. */
async function pushMinimal(repoTag: string): Promise<string> {
  const ref = `127.0.0.1:${port}/${repoTag}`;
  await dockerOk(['tag', MINIMAL_IMAGE, ref]);
  const push = pushQueue.then(() => dockerOk(['push', ref], { timeoutMs: 60_000 }));
  pushQueue = push.catch(() => undefined);
  await push;
  await dockerOk(['rmi', ref]);
  expect((await docker(['image', 'inspect', ref])).code).not.toBe(0);
  localTags.push(ref);
  return ref;
}

beforeAll(async () => {
  await requireEngine();
  await startRegistry();
}, 60_000);

afterAll(async () => {
  if (localTags.length) await docker(['rmi', ...localTags]);
  if (registry && registry.exitCode === null) {
    const exited = new Promise((r) => registry?.once('exit', r));
    registry.kill('SIGTERM');
    await Promise.race([exited, new Promise((r) => setTimeout(r, 5000).unref())]);
    if (registry.exitCode === null && registry.signalCode === null) registry.kill('SIGKILL');
  }
  removeTempDirs();
  await expectNoContainersLeft();
}, 60_000);

const allowLoopback = { images: { allow: ['127.0.0.1:*/**'] } };

test('a missing image is pulled from the loopback registry, with progress, and runs', async () => {
  const ref = await pushMinimal('gcd/minimal:t1');
  const progress: PullProgress[] = [];
  await withManager(
    async (manager) => {
      const sb = await manager.start({ image: ref, onPullProgress: (p) => progress.push(p) });
      expect(progress.length).toBeGreaterThan(0);
      expect(progress.every((p) => typeof p.id === 'string' && typeof p.status === 'string')).toBe(true);
      expect(progress.map((p) => p.status).join('\n')).toMatch(/Pulling from gcd\/minimal|Digest: sha256:|Status: /);
      expect((await docker(['image', 'inspect', '--format', '{{.Id}}', ref])).code).toBe(0);
      const r = await sb.exec('echo pulled && cat /proc/1/cmdline | tr "\\0" " "');
      expect(r.exitCode).toBe(0);
      expect(r.stdout).toMatch(/^pulled\n/);
      const c = await listManaged({ [LABEL.session]: manager.sessionId });
      expect(c.map((x) => x.id)).toEqual([sb.id]);
    },
    { overrides: allowLoopback },
  );
  // The registry really served it.
  const tags = (await (await fetch(`http://127.0.0.1:${port}/v2/gcd/minimal/tags/list`, { headers: { connection: 'close' } })).json()) as {
    tags: string[];
  };
  expect(tags.tags).toContain('t1');
}, 120_000);

test('a present image is not pulled again', async () => {
  const ref = await pushMinimal('gcd/minimal:t2');
  await dockerOk(['pull', ref], { timeoutMs: 60_000 });
  const engine = new RecordingEngine();
  const progress: PullProgress[] = [];
  await withManager(
    async (manager) => {
      const sb = await manager.start({ image: ref, onPullProgress: (p) => progress.push(p) });
      expect((await sb.exec('echo ok')).stdout).toBe('ok\n');
    },
    { overrides: allowLoopback, engine },
  );
  expect(engine.calls).not.toContain('pullImage');
  expect(progress).toEqual([]);
}, 120_000);

test.concurrent(
  'a missing tag on that registry: IMAGE_NOT_FOUND, and no container',
  async () => {
    await withManager(
      async (manager) => {
        await pushMinimal('gcd/minimal:exists');
        const ref = `127.0.0.1:${port}/gcd/minimal:no-such-tag`;
        await expect(manager.start({ image: ref })).rejects.toMatchObject({ name: 'SandboxError', code: 'IMAGE_NOT_FOUND' });
        expect(manager.list()).toEqual([]);
        expect(await listManaged({ [LABEL.session]: manager.sessionId })).toEqual([]);
      },
      { overrides: allowLoopback },
    );
  },
  120_000,
);

test.concurrent(
  'a missing repository on that registry: IMAGE_NOT_FOUND naming the image',
  async () => {
    await withManager(
      async (manager) => {
        const ref = `127.0.0.1:${port}/gcd/nothing-here:v1`;
        let caught: unknown;
        try {
          await manager.start({ image: ref });
        } catch (e) {
          caught = e;
        }
        expect(caught).toMatchObject({ code: 'IMAGE_NOT_FOUND' });
        expect((caught as Error).message).toContain(ref);
      },
      { overrides: allowLoopback },
    );
  },
  120_000,
);

test.concurrent(
  'pulling off: a missing image is IMAGE_NOT_FOUND without any pull',
  async () => {
    const engine = new RecordingEngine();
    await withManager(
      async (manager) => {
        const ref = `127.0.0.1:${port}/gcd/minimal:never-pushed`;
        await expect(manager.start({ image: ref })).rejects.toMatchObject({ code: 'IMAGE_NOT_FOUND' });
      },
      { overrides: { ...allowLoopback, images: { ...allowLoopback.images, pull: false } }, engine },
    );
    expect(engine.calls).toEqual(['hasImage']);
  },
  60_000,
);
