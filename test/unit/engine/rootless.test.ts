import type Docker from 'dockerode';
import { createBody, createContainer } from '../../../src/engine/docker-containers.js';
import type { DockerContext } from '../../../src/engine/docker-context.js';
import type { ContainerSpec, EngineInfo } from '../../../src/engine/container-engine.js';
import {
  capAddFor,
  defaultUser,
  hostOf,
  limitsRefusal,
  underFileSizeCap,
  unenforcedLimitsNote,
  usernsMode,
  type EngineHost,
} from '../../../src/engine/rootless.js';
import { execFileSync } from 'node:child_process';
import { sandboxError } from '../../support/sandbox-error.js';

const SPEC: ContainerSpec = {
  image: 'genaicode-docker/sandbox-minimal:latest',
  entrypoint: ['sleep'],
  cmd: ['60'],
  env: [],
  labels: { 'genaicode-docker.managed': 'true' },
  workdir: '/workspace',
  user: '1001:1001',
  memoryBytes: 256 << 20,
  nanoCpus: 1e9,
  pidsLimit: 64,
  network: 'none',
  readOnlyRoot: false,
  tmpfs: [],
  binds: [{ hostPath: '/home/u/project', containerPath: '/workspace', readOnly: true }],
  capAdd: [],
  autoRemove: true,
};

describe('whether an engine runs rootless, from its info', () => {
  test('Podman says Rootless; rootless Docker names it among its security options; cgroups from either shape', () => {
    expect(hostOf({ Rootless: true, CgroupVersion: '1' })).toEqual({ rootless: true, cgroupVersion: '1' });
    expect(hostOf({ SecurityOptions: ['name=seccomp,profile=default', 'name=rootless'], CgroupVersion: '2' })).toEqual({
      rootless: true,
      cgroupVersion: '2',
    });
    expect(hostOf({ SecurityOptions: ['name=seccomp,profile=default'], CgroupVersion: '2' })).toEqual({
      rootless: false,
      cgroupVersion: '2',
    });
    expect(hostOf({ Rootless: false, host: { cgroupVersion: 'v1' } })).toEqual({ rootless: false, cgroupVersion: '1' });
    // Only the option's own name counts, and only a real true.
    expect(hostOf({ SecurityOptions: ['name=notrootless'], Rootless: 'true' }).rootless).toBe(false);
    expect(hostOf({}).cgroupVersion).toBe('unknown');
  });
});

describe('the user namespace of a container', () => {
  const rootless: EngineHost = { rootless: true, cgroupVersion: '2' };
  const rootful: EngineHost = { rootless: false, cgroupVersion: '2' };

  test('keep-id on rootless Podman only: Docker and rootful Podman keep the engine default', () => {
    expect(usernsMode('podman', rootless)).toBe('keep-id');
    expect(usernsMode('podman', rootful)).toBeUndefined();
    expect(usernsMode('docker', rootless)).toBeUndefined();
    expect(usernsMode('unknown', rootless)).toBeUndefined();
  });

  test('the create body carries UsernsMode keep-id where asked, and no UsernsMode otherwise; the invariants stay', () => {
    const body = createBody(SPEC, 'podman', undefined, usernsMode('podman', rootless));
    expect(body.HostConfig?.UsernsMode).toBe('keep-id');
    expect(body.HostConfig).toMatchObject({
      Privileged: false,
      CapDrop: ['ALL'],
      SecurityOpt: ['no-new-privileges'],
      Memory: 256 << 20,
      PidsLimit: 64,
    });
    expect(body.User).toBe('1001:1001');
    for (const [kind, host] of [
      ['podman', rootful],
      ['docker', rootless],
      ['docker', rootful],
    ] as Array<[EngineInfo['kind'], EngineHost]>) {
      expect(createBody(SPEC, kind, undefined, usernsMode(kind, host)).HostConfig).not.toHaveProperty('UsernsMode');
    }
  });
});

describe('a rootless engine on cgroups v1', () => {
  test('is refused with a sentence naming why; cgroups v2 or a rootful engine is not', () => {
    expect(limitsRefusal({ rootless: true, cgroupVersion: '1' }, 'unix:///run/user/1001/podman/podman.sock')).toMatch(
      /^The engine at unix:\/\/\/run\/user\/1001\/podman\/podman\.sock runs rootless on cgroups v1, where it cannot enforce a container's memory, CPU and process limits/,
    );
    expect(limitsRefusal({ rootless: true, cgroupVersion: '2' }, 'x')).toBeUndefined();
    expect(limitsRefusal({ rootless: false, cgroupVersion: '1' }, 'x')).toBeUndefined();
    expect(limitsRefusal({ rootless: true, cgroupVersion: 'unknown' }, 'x')).toBeUndefined();
  });

  test("keep-id runs the image's user where the spec names none (root where the image names none), not the engine's", async () => {
    const image = (user: string | undefined) => () => Promise.resolve(user);
    expect(await defaultUser('keep-id', undefined, image(undefined))).toBe('0:0');
    expect(await defaultUser('keep-id', undefined, image(''))).toBe('0:0');
    expect(await defaultUser('keep-id', undefined, image('node'))).toBe('node');
    expect(await defaultUser('keep-id', '1001:1001', image('node'))).toBe('1001:1001');
    let asked = false;
    const ask = () => ((asked = true), Promise.resolve('node'));
    expect(await defaultUser(undefined, undefined, ask)).toBeUndefined(); // elsewhere the engine takes the image's user itself
    expect(asked).toBe(false);
  });

  test('the question before a start says when the operator accepted unenforced limits, and only then', () => {
    expect(unenforcedLimitsNote({ rootlessWithoutLimits: true })).toBe(
      ' (not enforced where the engine is rootless on cgroups v1: engine.rootlessWithoutLimits)',
    );
    expect(unenforcedLimitsNote({ rootlessWithoutLimits: false })).toBe('');
    expect(unenforcedLimitsNote({})).toBe('');
    expect(unenforcedLimitsNote(undefined)).toBe('');
  });

  test("the refusal names the operator's way out, and that setting lifts it", () => {
    expect(limitsRefusal({ rootless: true, cgroupVersion: '1' }, 'x')).toMatch(
      /accept containers without limits with engine\.rootlessWithoutLimits \(GENAICODE_DOCKER_ROOTLESS_WITHOUT_LIMITS=1\)\.$/,
    );
    expect(limitsRefusal({ rootless: true, cgroupVersion: '1' }, 'x', true)).toBeUndefined();
    expect(limitsRefusal({ rootless: true, cgroupVersion: '1' }, 'x', false)).toBeDefined();
  });

  test("rootful Podman: a user who is not root gets no capability back, unless a project overlay's upper folder needs them; Docker is left as it is", async () => {
    const created: Docker.ContainerCreateOptions[] = [];
    const ctx = (kind: string, imageUser = '') =>
      ({
        docker: {
          createContainer: (body: Docker.ContainerCreateOptions) => (created.push(body), Promise.resolve({ id: 'abc' })),
          getImage: () => ({ inspect: () => Promise.resolve({ Config: { User: imageUser } }) }),
        } as unknown as Docker,
        connection: { kind: 'socket', socketPath: '/run/p.sock', endpoint: 'unix:///run/p.sock' },
        kind: () => Promise.resolve(kind),
        host: () => Promise.resolve({ rootless: false, cgroupVersion: '2' }),
        serviceLimits: () => undefined,
        rootlessWithoutLimits: false,
        podmanVolumes: new Map(),
        execFileSizeCaps: new Map(),
      }) as unknown as DockerContext;
    const caps = ['CHOWN', 'DAC_OVERRIDE', 'KILL'];
    const capsOf = async (c: DockerContext, spec: ContainerSpec) => (await createContainer(c, spec), created.at(-1)!.HostConfig?.CapAdd);
    expect(await capsOf(ctx('podman'), { ...SPEC, user: '1000:1000', capAdd: caps })).toEqual([]);
    expect(await capsOf(ctx('podman', 'node'), { ...SPEC, user: undefined, capAdd: caps })).toEqual([]); // the image's user
    expect(await capsOf(ctx('podman'), { ...SPEC, user: undefined, capAdd: caps })).toEqual(caps); // root
    expect(await capsOf(ctx('podman'), { ...SPEC, user: '0:0', capAdd: caps })).toEqual(caps);
    expect(await capsOf(ctx('docker'), { ...SPEC, user: '1000:1000', capAdd: caps })).toEqual(caps); // Docker gives such a user none by itself
  });

  test('createContainer refuses before the engine is asked to create anything', async () => {
    const created: unknown[] = [];
    const ctx = {
      docker: {
        createContainer: (body: unknown) => (created.push(body), Promise.resolve({ id: 'abc' })),
        getImage: () => ({ inspect: () => Promise.resolve({ Config: { User: '' } }) }),
      } as unknown as Docker,
      connection: { kind: 'socket', socketPath: '/run/p.sock', endpoint: 'unix:///run/p.sock' },
      kind: () => Promise.resolve('podman'),
      host: () => Promise.resolve({ rootless: true, cgroupVersion: '1' }),
      serviceLimits: () => undefined,
      podmanVolumes: new Map(),
      execFileSizeCaps: new Map(),
    } as unknown as DockerContext;
    const e = await sandboxError(() => createContainer(ctx, SPEC));
    expect(e.code).toBe('POLICY_VIOLATION');
    expect(e.message).toMatch(/runs rootless on cgroups v1/);
    expect(e.data).toMatchObject({ rule: 'resourceLimits' });
    expect(created).toEqual([]);

    const ok = { ...ctx, host: () => Promise.resolve({ rootless: true, cgroupVersion: '2' }) } as DockerContext;
    await expect(createContainer(ok, SPEC)).resolves.toBe('abc');
    expect(created).toHaveLength(1);
    expect((created[0] as Docker.ContainerCreateOptions).HostConfig?.UsernsMode).toBe('keep-id');

    // The operator's setting: the same engine on cgroups v1 creates, with keep-id.
    const allowed = { ...ctx, rootlessWithoutLimits: true } as DockerContext;
    await expect(createContainer(allowed, SPEC)).resolves.toBe('abc');
    expect(created).toHaveLength(2);
    expect((created[1] as Docker.ContainerCreateOptions).HostConfig?.UsernsMode).toBe('keep-id');
    expect((created[1] as Docker.ContainerCreateOptions).User).toBe(SPEC.user);
    await createContainer(allowed, { ...SPEC, user: undefined });
    expect((created[2] as Docker.ContainerCreateOptions).User).toBe('0:0');
  });
});

describe("an exec's own file size cap (rootless Podman drops the container's)", () => {
  test('none asked: the command unchanged', () => {
    expect(underFileSizeCap(['sh', '-c', 'x'], undefined)).toEqual(['sh', '-c', 'x']);
  });

  test('the shell lowers its hard and soft limit, rounded down to 512-byte blocks, then becomes the command with its arguments intact', () => {
    const cmd = underFileSizeCap(
      ['sh', '-c', 'grep "Max file size" /proc/self/limits; printf "[%s]" "$@"', 'x', 'a b', '$HOME'],
      1_000_000,
    );
    const out = execFileSync(cmd[0]!, cmd.slice(1), { encoding: 'utf8' });
    const bytes = Math.floor(1_000_000 / 512) * 512;
    expect(out).toMatch(new RegExp(`^Max file size\\s+${bytes}\\s+${bytes}\\s`));
    expect(out.endsWith('[a b][$HOME]')).toBe(true);
  });
});

describe('the capabilities given back on rootless Podman, which makes them ambient for a user who is not root', () => {
  const base = ['CHOWN', 'DAC_OVERRIDE', 'SETUID'];
  test.each([undefined, '', '0', '0:0', 'root', 'root:root'])('root (%p) keeps them', (user) => {
    expect(capAddFor(true, user, base)).toEqual(base);
  });
  test.each(['1001', '1001:1001', '0x1', 'node', 'node:node', '65534:0', ' 0'])('any other user (%p) gets none', (user) => {
    expect(capAddFor(true, user, base)).toEqual([]);
  });
  test('elsewhere the list is unchanged (Docker gives a user who is not root none by itself)', () => {
    expect(capAddFor(false, '1001:1001', base)).toEqual(base);
  });
});
