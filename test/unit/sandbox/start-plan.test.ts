import { DEFAULT_IMAGE } from '../../../src/config/config-schema.js';
import { checkStartPolicy, chooseImage, containerSpec, planMounts, prepareProjectMount } from '../../../src/sandbox/start-plan.js';
import { FakeEngine } from '../../support/fake-engine.js';
import { removeTempDirs, syncSandboxError, tempDir, testConfig } from '../helpers.js';

afterEach(() => removeTempDirs());

describe('the steps of a start, each on its own', () => {
  test('chooseImage: the default, or the one asked for when the allowlist has it', () => {
    const c = testConfig();
    expect(chooseImage(c, {})).toBe(DEFAULT_IMAGE);
    expect(chooseImage(c, { image: 'alpine:3.20' })).toBe('alpine:3.20');
    expect(syncSandboxError(() => chooseImage(c, { image: 'evil/miner:latest' })).code).toBe('IMAGE_NOT_ALLOWED');
  });

  test('checkStartPolicy: a name, an option out of bounds, a mount off the allowlist', () => {
    const allowed = tempDir('gcd-allowed-');
    const c = testConfig({ mountAllow: [{ hostPath: allowed }] });
    expect(checkStartPolicy(c, { mounts: [{ hostPath: allowed, containerPath: '/data' }] }, { logsDir: c.logs.dir })).toEqual([
      { hostPath: expect.any(String), containerPath: '/data', writable: false },
    ]);
    expect(syncSandboxError(() => checkStartPolicy(c, { name: '../x' }, { logsDir: c.logs.dir })).code).toBe('INVALID_ARGUMENT');
    expect(syncSandboxError(() => checkStartPolicy(c, { memoryBytes: 1 }, { logsDir: c.logs.dir })).code).toBe('INVALID_ARGUMENT');
    const other = tempDir('gcd-other-');
    expect(
      syncSandboxError(() => checkStartPolicy(c, { mounts: [{ hostPath: other, containerPath: '/x' }] }, { logsDir: c.logs.dir })).code,
    ).toBe('POLICY_VIOLATION');
  });

  test('prepareProjectMount: none, a read-only bind, refused above config.project.mount or beside a mount at the working folder', async () => {
    const c = testConfig({ project: { mount: 'ro' } });
    const engine = new FakeEngine();
    const ctx = { logsDir: c.logs.dir };
    expect(await prepareProjectMount(c, engine, { project: undefined, mounts: [], name: 'n' }, ctx)).toBeUndefined();
    const ro = await prepareProjectMount(c, engine, { project: 'ro', mounts: [], name: 'n' }, ctx);
    expect(ro).toMatchObject({ mount: 'ro', containerRoot: c.workdir, binds: [{ containerPath: c.workdir, readOnly: true }] });
    await expect(prepareProjectMount(c, engine, { project: 'rw', mounts: [], name: 'n' }, ctx)).rejects.toMatchObject({
      code: 'POLICY_VIOLATION',
    });
    await expect(
      prepareProjectMount(
        c,
        engine,
        { project: 'ro', mounts: [{ hostPath: '/h', containerPath: `${c.workdir}/sub`, writable: false }], name: 'n' },
        ctx,
      ),
    ).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    expect(engine.calls).toEqual([]);
  });

  test('planMounts: the identities are taken only on a local engine', () => {
    const c = testConfig();
    const mounts = [{ hostPath: tempDir('gcd-m-'), containerPath: '/data', writable: false }];
    expect(planMounts(c, new FakeEngine(), mounts, undefined)).toMatchObject({
      binds: [{ containerPath: '/data', readOnly: true }],
      identities: [],
    });
    const local = new FakeEngine({
      connection: { kind: 'socket', socketPath: '/var/run/docker.sock', endpoint: 'unix:///var/run/docker.sock' },
    });
    expect(planMounts(c, local, mounts, undefined).identities).toEqual([expect.objectContaining({ containerPath: '/data' })]);
  });

  test('containerSpec: the dead-man switch, the limits, and a read-only root whose working folder is a tmpfs volume', () => {
    const c = testConfig();
    const plan = containerSpec(
      c,
      's1',
      { readOnlyRoot: true, ttlSeconds: 60, pids: 64 },
      {
        image: DEFAULT_IMAGE,
        name: 'box',
        user: '1000:1000',
        binds: [],
        project: undefined,
      },
    );
    expect(plan.spec).toMatchObject({
      image: DEFAULT_IMAGE,
      name: 'box',
      entrypoint: ['sleep'],
      cmd: ['60'],
      user: '1000:1000',
      pidsLimit: 64,
      readOnlyRoot: true,
      tmpfs: [{ path: '/tmp', sizeBytes: c.tmpfsSize }],
      tmpfsVolumes: [{ path: c.workdir, sizeBytes: c.tmpfsSize }],
      autoRemove: true,
    });
    expect(plan.expiresAt.getTime() - plan.createdAt.getTime()).toBe(60_000);
    expect(plan).toMatchObject({ image: DEFAULT_IMAGE, name: 'box', workdir: c.workdir, readOnlyRoot: true, pidsLimit: 64 });
  });
});
