/**
 * The priming container of a project overlay on rootless Podman (podman-overlays.ts): what it is
 * made with, that it is removed however its initialisation ends, and that the start is refused
 * when an upper folder is not this process's user's afterwards.
 */
import { jest } from '@jest/globals';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type Docker from 'dockerode';
import type { DockerContext } from '../../../src/engine/docker-context.js';
import { primeRootlessOverlays } from '../../../src/engine/podman-overlays.js';
import { SandboxError } from '../../../src/errors.js';
import { sandboxError } from '../../support/sandbox-error.js';
import { removeTempDirs, tempDir } from '../../support/temp-dirs.js';

afterAll(() => removeTempDirs());

const REAL_BODY = {
  Image: 'img',
  name: 'genaicode-docker-abc-1',
  User: '1001:1001',
  Env: ['SECRET=1'],
  Labels: { 'genaicode-docker.managed': 'true', 'genaicode-docker.owner': 'me' },
  ExposedPorts: { '8080/tcp': {} },
  HostConfig: {
    NetworkMode: 'bridge',
    CapAdd: ['CHOWN', 'DAC_OVERRIDE'],
    PortBindings: { '8080/tcp': [{ HostIp: '127.0.0.1', HostPort: '' }] },
    UsernsMode: 'keep-id',
    Mounts: [{ Type: 'bind', Source: '/home/u/secret', Target: '/mnt' }],
    Tmpfs: { '/tmp': 'size=1m' },
  },
};

/** A fake engine: what was created, initialised and removed; `init` answers as told. */
function engine(init: 'ok' | 'fail' | 'remove-fails' = 'ok') {
  const created: Array<Record<string, unknown>> = [];
  const removed: string[] = [];
  const dialed: string[] = [];
  const ctx = {
    docker: {
      createContainer: (body: Record<string, unknown>) => (created.push(body), Promise.resolve({ id: 'prime0123456789' })),
      getContainer: (id: string) => ({
        remove: () =>
          init === 'remove-fails'
            ? Promise.reject(Object.assign(new Error('busy'), { statusCode: 500 }))
            : (removed.push(id), Promise.resolve()),
      }),
      modem: {
        dial: (o: { path: string }, cb: (err: unknown, data: unknown) => void) => {
          dialed.push(o.path);
          if (init === 'fail') cb(Object.assign(new Error('runtime failed'), { statusCode: 500 }), undefined);
          else cb(null, {});
        },
      },
    } as unknown as Docker,
    fail: (e: unknown, context: string) => new SandboxError('ENGINE_ERROR', `${context}: ${(e as Error).message}`),
  } as unknown as DockerContext;
  return { ctx, created, removed, dialed };
}

function upper(): string {
  const dir = join(tempDir('gcd-prime-'), 'upper');
  mkdirSync(dir);
  return dir;
}

test("it mounts each volume at a path of its own, with the real container's user, user namespace, image and labels, and nothing else", async () => {
  const e = engine();
  await primeRootlessOverlays(e.ctx, REAL_BODY, ['vol-a', 'vol-b'], [upper(), upper()]);
  expect(e.created).toHaveLength(1);
  const body = e.created[0]!;
  expect(body).toMatchObject({ Image: 'img', User: '1001:1001', Labels: REAL_BODY.Labels, Entrypoint: ['true'], NetworkDisabled: true });
  expect(body.name).toBe('vol-a-prime');
  expect(body.Env).toBeUndefined();
  expect(body.ExposedPorts).toBeUndefined();
  const host = body.HostConfig as Record<string, unknown>;
  expect(host).toMatchObject({ NetworkMode: 'none', UsernsMode: 'keep-id', CapDrop: ['ALL'], Privileged: false, AutoRemove: false });
  expect(host.CapAdd).toBeUndefined();
  expect(host.PortBindings).toBeUndefined();
  expect(host.Tmpfs).toBeUndefined();
  const mounts = host.Mounts as Array<{ Source: string; Target: string }>;
  expect(mounts.map((m) => m.Source)).toEqual(['vol-a', 'vol-b']);
  // A fresh path each time, which no image has: the host bind of the real body is not there.
  expect(mounts[0]!.Target).toMatch(/^\/\.genaicode-docker-overlay-[0-9a-f]{12}\/0$/);
  expect(e.dialed).toEqual(['/v4.0.0/libpod/containers/prime0123456789/init']);
  expect(e.removed).toEqual(['prime0123456789']);
});

test('a failed initialisation is the start failing, and the container is removed all the same', async () => {
  const e = engine('fail');
  const err = await sandboxError(() => primeRootlessOverlays(e.ctx, REAL_BODY, ['vol-a'], [upper()]));
  expect(err.message).toMatch(/^Prepare the project overlay on rootless Podman: runtime failed/);
  expect(e.removed).toEqual(['prime0123456789']);
});

test('a container that cannot be removed fails the start (it would hold the volumes)', async () => {
  const e = engine('remove-fails');
  const err = await sandboxError(() => primeRootlessOverlays(e.ctx, REAL_BODY, ['vol-a'], [upper()]));
  expect(err.message).toMatch(/^Remove the container prime0123456 that prepared the project overlay: busy/);
});

test("an upper folder that is not this process's user's afterwards refuses the start, saying what works", async () => {
  const e = engine();
  const me = process.getuid!();
  const folders = [upper(), upper()];
  // This process as another uid than the folders' owner: as if Podman had given them to someone else.
  const uid = jest.spyOn(process, 'getuid').mockReturnValue(me + 1);
  try {
    const err = await sandboxError(() => primeRootlessOverlays(e.ctx, REAL_BODY, ['vol-a', 'vol-b'], folders));
    expect(err.code).toBe('POLICY_VIOLATION');
    expect(err.message).toContain(`${folders[0]} belongs to uid ${me} after Podman's first mount, not to this process's uid ${me + 1}`);
    expect(err.message).toMatch(/leave 'user' unset \(or set it to this uid\), or mount the project read-only \('ro'\)/);
    expect(err.data).toMatchObject({ rule: 'projectMount' });
  } finally {
    uid.mockRestore();
  }
  await expect(primeRootlessOverlays(e.ctx, REAL_BODY, ['vol-a', 'vol-b'], folders)).resolves.toBeUndefined();
});
