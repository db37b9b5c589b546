/**
 * Real image pulls from a registry this file starts on loopback (nothing leaves the
 * machine): pull progress, a sandbox from the pulled image, missing tags and repositories,
 * and pulling turned off.
 */
import { LABEL, type PullProgress } from '../../../src/index.js';
import {
  docker,
  dockerOk,
  expectNoContainersLeft,
  fileSession,
  listManaged,
  RecordingEngine,
  requireEngine,
  withManager,
} from '../../support/engine.js';
import { startLoopbackRegistry, type LoopbackRegistry } from '../../support/loopback-registry.js';
import { removeTempDirs } from '../../support/temp-dirs.js';

fileSession('image-pull');

let registry: LoopbackRegistry | undefined;
let port = 0;

/** Pushes the minimal image under `repo:tag` to the loopback registry; the local tag is gone after. */
async function pushMinimal(repoTag: string): Promise<string> {
  if (!registry) throw new Error('the loopback registry is not running');
  const ref = await registry.pushMinimal(repoTag);
  expect((await docker(['image', 'inspect', ref])).code).not.toBe(0);
  return ref;
}

beforeAll(async () => {
  await requireEngine();
  registry = await startLoopbackRegistry();
  port = registry.port;
}, 60_000);

afterAll(async () => {
  await registry?.stop();
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
