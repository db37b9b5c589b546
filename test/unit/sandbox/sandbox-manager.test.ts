import { BASE_CAPABILITIES } from '../../../src/policy/policy.js';
import { spawnSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { DEFAULT_IMAGE, type ConfigInput } from '../../../src/config/config-schema.js';
import type { ContainerSpec, PullProgress } from '../../../src/engine/container-engine.js';
import { SandboxError } from '../../../src/errors.js';
import { containerLabels, LABEL } from '../../../src/sandbox/labels.js';
import { SandboxManager, newSessionId, type StartOptions } from '../../../src/sandbox/sandbox-manager.js';
import { PACKAGE_VERSION } from '../../../src/version.js';
import { FakeEngine, type FakeEngineOptions } from '../../support/fake-engine.js';
import { removeTempDirs, sandboxError, tempDir, testConfig } from '../helpers.js';

const SESSION = '20260101-000000-abcdef';
const MiB = 1024 ** 2;
const managers: SandboxManager[] = [];

function setup(options: { config?: ConfigInput; engine?: FakeEngineOptions; sweepOnStart?: boolean } = {}) {
  const config = testConfig(options.config);
  const engine = new FakeEngine({ images: ['alpine:3.20', DEFAULT_IMAGE], ...options.engine });
  const manager = new SandboxManager({ config, engine, sessionId: SESSION, sweepOnStart: options.sweepOnStart ?? false });
  managers.push(manager);
  return { config, engine, manager };
}

afterEach(async () => {
  for (const m of managers.splice(0)) await m[Symbol.asyncDispose]();
  removeTempDirs();
});

/** A pid that belonged to a process that has ended. */
function deadPid(): number {
  const r = spawnSync(process.execPath, ['-e', '0']);
  if (!r.pid) throw new Error('could not spawn');
  return r.pid;
}

function createdSpec(engine: FakeEngine): ContainerSpec {
  const calls = engine.callsOf('createContainer');
  expect(calls).toHaveLength(1);
  return calls[0]![0];
}

describe('SandboxManager.start: checks before any engine call', () => {
  test('a remote engine: the project (ro, scratch, rw) and host mounts are refused with a sentence that says why, no container made', async () => {
    const host = tempDir('remote-mount-');
    const remote = (protocol: 'http' | 'https') =>
      new FakeEngine({
        images: [DEFAULT_IMAGE],
        connection: { kind: 'tcp', host: '10.0.0.1', port: 2376, protocol, endpoint: `tcp://10.0.0.1:2376` },
      });
    const cases: Array<{ start: StartOptions; what: RegExp; protocol: 'http' | 'https' }> = [
      { start: { project: 'ro' }, what: /the project \('ro' mount\)/, protocol: 'https' },
      { start: { project: 'scratch' }, what: /the project \('scratch' mount\)/, protocol: 'https' },
      { start: { project: 'rw' }, what: /the project \('rw' mount\)/, protocol: 'http' },
      { start: { mounts: [{ hostPath: host, containerPath: '/data' }] }, what: /1 host folder \('mounts'\)/, protocol: 'https' },
    ];
    for (const { start, what, protocol } of cases) {
      const engine = remote(protocol);
      const manager = new SandboxManager({
        config: testConfig({ project: { mount: 'rw' }, mountAllow: [{ hostPath: host, writable: false }] }),
        engine,
        sessionId: SESSION,
        sweepOnStart: false,
      });
      managers.push(manager);
      const e = await manager.start(start).catch((x: unknown) => x);
      expect(e).toBeInstanceOf(SandboxError);
      expect((e as SandboxError).code).toBe('POLICY_VIOLATION');
      expect((e as SandboxError).data).toEqual({ rule: 'localHostPaths' });
      expect((e as SandboxError).message).toMatch(what);
      expect((e as SandboxError).message).toContain('tcp://10.0.0.1:2376 is remote');
      expect((e as SandboxError).message).toContain('a path it mounts is a path on ITS machine');
      expect(engine.calls).toEqual([]);
    }
    // Nothing of the host asked for: a remote engine starts the container as a local one does.
    const engine = remote('https');
    const manager = new SandboxManager({ config: testConfig(), engine, sessionId: SESSION, sweepOnStart: false });
    managers.push(manager);
    await manager.start({ project: 'none' });
    expect(engine.callsOf('createContainer')).toHaveLength(1);
  });

  test('rw and scratch need a local overlay the engine mounts: a rootless Podman is refused with a sentence, no container made', async () => {
    class PodmanEngine extends FakeEngine {
      override async info() {
        return { ...(await super.info()), kind: 'podman' as const, rootless: true };
      }
    }
    const cases = [
      {
        why: /the engine is a rootless Podman run by .*, and this process runs as uid \d+: it mounts the overlay as its own user/,
        engine: new PodmanEngine({ images: [DEFAULT_IMAGE] }),
      },
    ];
    for (const { why, engine } of cases) {
      for (const project of ['rw', 'scratch'] as const) {
        const manager = new SandboxManager({
          config: testConfig({ project: { mount: 'rw' } }),
          engine,
          sessionId: SESSION,
          sweepOnStart: false,
        });
        managers.push(manager);
        const e = await manager.start({ project }).catch((x: unknown) => x);
        expect(e).toBeInstanceOf(SandboxError);
        expect((e as SandboxError).code).toBe('POLICY_VIOLATION');
        expect((e as SandboxError).message).toMatch(why);
        expect((e as SandboxError).message).toContain("mount it read-only ('ro') instead");
        expect(engine.callsOf('createContainer')).toEqual([]);
      }
    }
  });

  test('IMAGE_NOT_ALLOWED is raised before ANY engine call', async () => {
    const { engine, manager } = setup({ sweepOnStart: true });
    const e = await sandboxError(() => manager.start({ image: 'evil/miner:1' }));
    expect(e.code).toBe('IMAGE_NOT_ALLOWED');
    expect(e.data.image).toBe('evil/miner:1');
    expect(engine.calls).toEqual([]);
  });

  test('the configured default image is checked too', async () => {
    const { engine, manager } = setup({ config: { images: { default: 'evil/miner:1' } }, sweepOnStart: true });
    expect((await sandboxError(() => manager.start())).code).toBe('IMAGE_NOT_ALLOWED');
    expect(engine.calls).toEqual([]);
  });

  test.each<[string, StartOptions, string]>([
    ['an invalid image reference', { image: 'alpine; rm -rf /' }, 'INVALID_ARGUMENT'],
    ['an invalid name', { name: '-bad name' }, 'INVALID_ARGUMENT'],
    ['memory out of bounds', { memoryBytes: 1024 }, 'INVALID_ARGUMENT'],
    ['cpus out of bounds', { cpus: 0 }, 'INVALID_ARGUMENT'],
    ['pids not whole', { pids: 10.5 }, 'INVALID_ARGUMENT'],
    ['ttl too short', { ttlSeconds: 1 }, 'INVALID_ARGUMENT'],
    ['a relative workdir', { workdir: 'work' }, 'INVALID_ARGUMENT'],
    ['a mount not on the allowlist', { mounts: [{ hostPath: '/etc', containerPath: '/etc-host' }] }, 'POLICY_VIOLATION'],
    ['a mount of the engine socket', { mounts: [{ hostPath: '/var/run/docker.sock', containerPath: '/s' }] }, 'POLICY_VIOLATION'],
  ])('%s is rejected before any engine call', async (_what, options, code) => {
    const { engine, manager } = setup({ sweepOnStart: true });
    const e = await sandboxError(() => manager.start(options));
    expect(e.code).toBe(code);
    expect(engine.calls).toEqual([]);
  });

  test('start options that break an invariant are POLICY_VIOLATION before any engine call', async () => {
    const { engine, manager } = setup({ sweepOnStart: true });
    const options = { image: 'alpine:3.20', privileged: true }; // what an untyped caller could send
    const e = await sandboxError(() => manager.start(options));
    expect(e.code).toBe('POLICY_VIOLATION');
    expect(e.data.rule).toBe('noPrivileged');
    const host = { image: 'alpine:3.20', network: 'host' as const };
    // @ts-expect-error network 'host' is not a StartOptions value: the runtime check is what stops it
    expect((await sandboxError(() => manager.start(host))).data.rule).toBe('noHostNamespaces');
    expect(engine.calls).toEqual([]);
  });

  test('an aborted signal is ABORTED before any engine call', async () => {
    const { engine, manager } = setup({ sweepOnStart: true });
    const ac = new AbortController();
    ac.abort();
    expect((await sandboxError(() => manager.start({ signal: ac.signal }))).code).toBe('ABORTED');
    expect(engine.calls).toEqual([]);
  });
});

describe('SandboxManager.start: images', () => {
  test('a missing image is pulled, progress forwarded, then created and started', async () => {
    const { engine, manager } = setup({ engine: { images: [] } });
    const progress: PullProgress[] = [];
    const onPullProgress = (p: PullProgress) => progress.push(p);
    const ac = new AbortController();
    const s = await manager.start({ image: 'alpine:3.20', onPullProgress, signal: ac.signal });
    // info: once per engine, to learn whether its storage driver can have a disk quota.
    expect(engine.methods()).toEqual(['hasImage', 'pullImage', 'info', 'createContainer', 'startContainer']);
    // Through the pulls in flight (pull-flights.ts): the engine gets their fan-out and their own signal.
    const [ref, forwarded, signal] = engine.callsOf('pullImage')[0]!;
    expect(ref).toBe('alpine:3.20');
    expect(forwarded).toEqual(expect.any(Function));
    expect(signal).toEqual(expect.any(AbortSignal));
    expect(progress).toEqual([
      { id: 'alpine:3.20', status: 'Pulling from library' },
      { id: 'layer-1', status: 'Downloading', current: 512, total: 1024 },
      { id: 'alpine:3.20', status: 'Downloaded newer image for alpine:3.20' },
    ]);
    expect(engine.containers.get(s.id)?.running).toBe(true);
  });

  test('a present image is not pulled', async () => {
    const { engine, manager } = setup();
    await manager.start({ image: 'alpine:3.20' });
    expect(engine.callsOf('pullImage')).toEqual([]);
  });

  test('images.pull false: IMAGE_NOT_FOUND without a pull', async () => {
    const { engine, manager } = setup({ config: { images: { pull: false } }, engine: { images: [] } });
    const e = await sandboxError(() => manager.start({ image: 'alpine:3.20' }));
    expect(e.code).toBe('IMAGE_NOT_FOUND');
    expect(e.message).toContain('images.pull=false');
    expect(e.data.image).toBe('alpine:3.20');
    expect(engine.methods()).toEqual(['hasImage']);
  });

  test('a pull that finds nothing is IMAGE_NOT_FOUND and nothing is created', async () => {
    const { engine, manager } = setup({ engine: { images: [], pullable: () => false } });
    expect((await sandboxError(() => manager.start({ image: 'alpine:3.20' }))).code).toBe('IMAGE_NOT_FOUND');
    expect(engine.callsOf('createContainer')).toEqual([]);
  });
});

describe('SandboxManager.start: the container', () => {
  test('created but failing to start: the container is removed and the error rethrown', async () => {
    const { engine, manager } = setup();
    const failure = new SandboxError('CONTAINER_START_FAILED', 'Container abc did not start: OCI runtime create failed');
    engine.fail('startContainer', failure);
    const e = await sandboxError(() => manager.start());
    expect(e).toBe(failure);
    const created = engine.callsOf('createContainer');
    expect(created).toHaveLength(1);
    const id = engine.callsOf('startContainer')[0]![0];
    expect(engine.callsOf('removeContainer')).toEqual([[id, true]]);
    expect(engine.containers.size).toBe(0);
    expect(manager.list()).toEqual([]);
  });

  test('labels and the ContainerSpec follow the configuration', async () => {
    const { engine, manager, config } = setup({
      config: {
        limits: { memory: '256m', cpus: 0.5, pids: 64 },
        network: 'bridge',
        readOnlyRoot: true,
        tmpfsSize: '32m',
        capAdd: ['NET_RAW'],
        user: '1000:1000',
        ttlSeconds: 600,
        workdir: '/work',
      },
    });
    const before = Date.now();
    const s = await manager.start({ env: { A: '1', B: 'x=y' } });
    const spec = createdSpec(engine);
    expect(spec).toEqual({
      image: config.images.default,
      name: 'genaicode-docker-abcdef-1',
      entrypoint: ['sleep'],
      cmd: ['600'],
      env: ['A=1', 'B=x=y'],
      labels: expect.any(Object),
      workdir: '/work',
      user: '1000:1000',
      memoryBytes: 256 * MiB,
      nanoCpus: 500_000_000,
      pidsLimit: 64,
      network: 'bridge',
      readOnlyRoot: true,
      tmpfs: [{ path: '/tmp', sizeBytes: 32 * MiB }],
      tmpfsVolumes: [{ path: '/work', sizeBytes: 32 * MiB }],
      binds: [],
      capAdd: [...BASE_CAPABILITIES, 'NET_RAW'],
      diskBytes: 2 * 1024 ** 3,
      autoRemove: true,
      expiresAt: expect.any(Date),
    });
    // The same moment as the label: a cluster ends the pod then (activeDeadlineSeconds).
    expect(spec.expiresAt?.toISOString()).toBe(spec.labels[LABEL.expiresAt]);
    expect(Object.keys(spec.labels).sort()).toEqual(Object.values(LABEL).sort());
    expect(spec.labels[LABEL.managed]).toBe('true');
    expect(spec.labels[LABEL.session]).toBe(SESSION);
    expect(spec.labels[LABEL.owner]).toBe(`${hostname()}:${process.pid}`);
    expect(spec.labels[LABEL.version]).toBe(PACKAGE_VERSION);
    const created = Date.parse(spec.labels[LABEL.createdAt] ?? '');
    const expires = Date.parse(spec.labels[LABEL.expiresAt] ?? '');
    expect(created).toBeGreaterThanOrEqual(before - 1);
    expect(created).toBeLessThanOrEqual(Date.now());
    expect(expires - created).toBe(600_000);
    expect(s.info).toMatchObject({
      id: s.id,
      name: 'genaicode-docker-abcdef-1',
      image: config.images.default,
      sessionId: SESSION,
      workdir: '/work',
      memoryBytes: 256 * MiB,
      pidsLimit: 64,
    });
    expect(s.info.expiresAt.getTime() - s.info.createdAt.getTime()).toBe(600_000);
  });

  test('defaults: no user, network none, writable root without tmpfs, 512 MiB, 1 CPU, 256 pids', async () => {
    const { engine, manager } = setup();
    await manager.start({ image: 'alpine:3.20' });
    const spec = createdSpec(engine);
    expect(spec.user).toBeUndefined();
    expect('user' in spec).toBe(false);
    expect(spec).toMatchObject({
      network: 'none',
      readOnlyRoot: false,
      tmpfs: [],
      memoryBytes: 512 * MiB,
      nanoCpus: 1e9,
      pidsLimit: 256,
      capAdd: [...BASE_CAPABILITIES],
      cmd: ['7200'],
      workdir: '/workspace',
      env: [],
    });
  });

  test('the disk limit: the engine quota where it has one; else created without it once, and measured from then on', async () => {
    const withQuota = setup({ config: { limits: { disk: '256m' } } });
    await withQuota.manager.start();
    expect(createdSpec(withQuota.engine).diskBytes).toBe(256 * MiB);
    expect(withQuota.manager.diskEnforcement).toBe('engine');

    const noQuota = setup();
    const refused = new SandboxError('ENGINE_ERROR', 'Create container: the storage driver has no disk quotas', {
      data: { noDiskQuota: true },
    });
    noQuota.engine.fail('createContainer', refused, { times: 1 });
    expect(noQuota.manager.diskEnforcement).toBe('unknown');
    await noQuota.manager.start();
    await noQuota.manager.start();
    const specs = noQuota.engine.callsOf('createContainer').map(([spec]) => spec.diskBytes);
    // The first try with the quota, then without: and never with it again.
    expect(specs).toEqual([2 * 1024 ** 3, undefined, undefined]);
    expect(noQuota.manager.diskEnforcement).toBe('measured');
  });

  test('overlay2 on ext4 (no quota possible): measured, with no create tried with a quota', async () => {
    const { engine, manager } = setup();
    const info = engine.info.bind(engine);
    engine.info = async () => ({ ...(await info()), storage: { driver: 'overlay2', backingFilesystem: 'extfs' } });
    await manager.start();
    expect(engine.callsOf('createContainer').map(([spec]) => spec.diskBytes)).toEqual([undefined]);
    expect(manager.diskEnforcement).toBe('measured');
  });

  test('start options override the configuration', async () => {
    const { engine, manager } = setup({ config: { readOnlyRoot: true, network: 'bridge' } });
    await manager.start({
      image: 'alpine:3.20',
      name: 'my-box',
      network: 'none',
      memoryBytes: 64 * MiB,
      cpus: 2,
      pids: 32,
      readOnlyRoot: false,
      ttlSeconds: 60,
      workdir: '/src',
    });
    expect(createdSpec(engine)).toMatchObject({
      name: 'my-box',
      network: 'none',
      memoryBytes: 64 * MiB,
      nanoCpus: 2e9,
      pidsLimit: 32,
      readOnlyRoot: false,
      tmpfs: [],
      cmd: ['60'],
      workdir: '/src',
    });
  });

  test('read-only root with a mount on the workdir: tmpfs only at /tmp; the mount is a bind', async () => {
    const host = tempDir('gcd-mount-');
    mkdirSync(join(host, 'src'));
    const { engine, manager } = setup({
      config: { readOnlyRoot: true, user: '1000:1000', mountAllow: [{ hostPath: host, writable: true }] },
    });
    await manager.start({
      mounts: [
        { hostPath: join(host, 'src'), containerPath: '/workspace', writable: true },
        { hostPath: host, containerPath: '/ref' },
      ],
    });
    const spec = createdSpec(engine);
    expect(spec.user).toBe('1000:1000');
    expect(spec.tmpfs).toEqual([{ path: '/tmp', sizeBytes: 64 * MiB }]);
    expect(spec.tmpfsVolumes).toBeUndefined();
    expect(spec.binds).toEqual([
      { hostPath: join(host, 'src'), containerPath: '/workspace', readOnly: false },
      { hostPath: host, containerPath: '/ref', readOnly: true },
    ]);
  });

  test('the engine\u2019s own socket cannot be mounted even under an allowlisted folder', async () => {
    const host = tempDir('gcd-engine-');
    const socketPath = join(host, 'run', 'engine.sock');
    mkdirSync(join(host, 'run'));
    const { engine, manager } = setup({
      config: { mountAllow: [{ hostPath: host, writable: false }] },
      engine: { connection: { kind: 'socket', socketPath, endpoint: `unix://${socketPath}` } },
    });
    const e = await sandboxError(() => manager.start({ mounts: [{ hostPath: join(host, 'run'), containerPath: '/run-host' }] }));
    expect(e.code).toBe('POLICY_VIOLATION');
    expect(e.data.rule).toBe('noEngineMount');
    expect(engine.calls).toEqual([]);
    await expect(manager.start({ mounts: [{ hostPath: host, containerPath: '/h' }] })).rejects.toMatchObject({ code: 'POLICY_VIOLATION' });
  });

  test('generated names count up within the session', async () => {
    const { manager } = setup();
    const a = await manager.start();
    const b = await manager.start();
    expect([a.name, b.name]).toEqual(['genaicode-docker-abcdef-1', 'genaicode-docker-abcdef-2']);
    expect(manager.list().map((s) => s.id)).toEqual([a.id, b.id]);
  });

  test('newSessionId sorts by time', () => {
    expect(newSessionId(new Date('2026-11-22T03:15:00.000Z'))).toMatch(/^20261122-031500-[0-9a-f]{6}$/);
  });
});

describe('SandboxManager.get', () => {
  test('finds only this manager\u2019s sandboxes, by name, id or id prefix of at least 6', async () => {
    const { engine, manager } = setup();
    const s = await manager.start({ name: 'box-one' });
    const foreign = engine.seedContainer({
      name: 'foreign',
      labels: containerLabels('other', { host: 'h', pid: 1 }, new Date(), new Date(Date.now() + 3600_000)),
    });
    expect(manager.get('box-one')).toBe(s);
    expect(manager.get(s.id)).toBe(s);
    expect(manager.get(s.id.slice(0, 6))).toBe(s);
    expect(manager.get(` ${s.id.slice(0, 12)} `)).toBe(s);
    expect(manager.get(s.id.slice(0, 5))).toBeUndefined();
    expect(manager.get('')).toBeUndefined();
    expect(manager.get(foreign.id)).toBeUndefined();
    expect(manager.get(foreign.id.slice(0, 12))).toBeUndefined();
    expect(manager.get('foreign')).toBeUndefined();
  });

  test('a stopped sandbox is no longer found', async () => {
    const { manager } = setup();
    const s = await manager.start({ name: 'box-two' });
    await s.stop();
    expect(manager.get('box-two')).toBeUndefined();
    expect(manager.get(s.id)).toBeUndefined();
    expect(manager.list()).toEqual([]);
  });
});

describe('SandboxManager: sweeping and stopping', () => {
  test('the startup sweep runs once and removes a dead owner\u2019s container', async () => {
    const { engine, manager } = setup({ sweepOnStart: true });
    const stale = engine.seedContainer({
      name: 'stale',
      labels: containerLabels('old', { host: hostname(), pid: deadPid() }, new Date(), new Date(Date.now() + 3600_000)),
    });
    const alive = engine.seedContainer({
      name: 'alive',
      labels: containerLabels('other', { host: hostname(), pid: process.ppid }, new Date(), new Date(Date.now() + 3600_000)),
    });
    await manager.start();
    await manager.start();
    expect(engine.callsOf('listContainers')).toHaveLength(1);
    expect(engine.methods()[0]).toBe('listContainers');
    expect(engine.containers.has(stale.id)).toBe(false);
    expect(engine.containers.has(alive.id)).toBe(true);
  });

  test('concurrent first starts share one sweep', async () => {
    const { engine, manager } = setup({ sweepOnStart: true });
    await Promise.all([manager.start(), manager.start(), manager.start()]);
    expect(engine.callsOf('listContainers')).toHaveLength(1);
    expect(manager.list()).toHaveLength(3);
  });

  test('an unreachable engine during the sweep fails the start; the next start sweeps again', async () => {
    const { engine, manager } = setup({ sweepOnStart: true });
    const down = new SandboxError('ENGINE_UNAVAILABLE', 'No container engine answers');
    engine.fail('listContainers', down, { times: 1 });
    expect(await sandboxError(() => manager.start())).toBe(down);
    await manager.start();
    expect(engine.callsOf('listContainers')).toHaveLength(2);
  });

  test('any other sweep failure does not block the start', async () => {
    const { engine, manager } = setup({ sweepOnStart: true });
    engine.fail('listContainers', new SandboxError('ENGINE_ERROR', 'List containers: 500'));
    await expect(manager.start()).resolves.toBeDefined();
  });

  test('sweepOnStart false: no sweep', async () => {
    const { engine, manager } = setup({ sweepOnStart: false });
    await manager.start();
    expect(engine.callsOf('listContainers')).toEqual([]);
  });

  test('sweep() by hand never removes this manager\u2019s live sandboxes, even with all', async () => {
    const { engine, manager } = setup();
    const s = await manager.start();
    const other = engine.seedContainer({
      name: 'other',
      labels: containerLabels('x', { host: 'h', pid: 1 }, new Date(), new Date(Date.now() + 3600_000)),
    });
    const report = await manager.sweep({ all: true });
    expect(report.removed.map((r) => r.id)).toEqual([other.id]);
    expect(engine.containers.has(s.id)).toBe(true);
  });

  test('stopAll and asyncDispose stop and remove every live sandbox', async () => {
    const { engine, manager } = setup();
    const a = await manager.start();
    const b = await manager.start();
    await manager[Symbol.asyncDispose]();
    expect(manager.list()).toEqual([]);
    expect(engine.containers.size).toBe(0);
    expect(
      engine
        .callsOf('stopContainer')
        .map(([id]) => id)
        .sort(),
    ).toEqual([a.id, b.id].sort());
    expect(a.isStopped && b.isStopped).toBe(true);
  });
});
