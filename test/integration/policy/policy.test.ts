/**
 * The security policy against a real engine: every invariant is rejected with
 * POLICY_VIOLATION before any engine call; the image allowlist likewise with
 * IMAGE_NOT_ALLOWED; and a started container carries every hardening setting and label.
 */
import { chownSync, mkdirSync, readFileSync, realpathSync, symlinkSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import {
  checkImageAllowed,
  LABEL,
  loadConfig,
  PACKAGE_VERSION,
  SandboxError,
  type ConfigInput,
  type StartOptions,
} from '../../../src/index.js';
import { processStart } from '../../../src/sandbox/labels.js';
import { inspectContainer, listManaged, MINIMAL_IMAGE, RecordingEngine, withManager, engineSuite } from '../../support/engine.js';
import { tempDir, testConfig } from '../../support/temp-dirs.js';

engineSuite('policy');

const MIB = 1024 ** 2;

function errorCode(fn: () => unknown): string {
  try {
    fn();
  } catch (e) {
    return e instanceof SandboxError ? e.code : `not a SandboxError: ${String(e)}`;
  }
  return 'no error';
}

/** Runs a rejected start with a recording engine: the error, and proof no engine call was made. */
async function rejectedStart(options: StartOptions, configOverrides: Parameters<typeof testConfig>[0] = {}): Promise<SandboxError> {
  const engine = new RecordingEngine();
  return withManager(
    async (manager) => {
      let caught: unknown;
      try {
        await manager.start(options);
      } catch (e) {
        caught = e;
      }
      expect(caught).toBeInstanceOf(SandboxError);
      expect(engine.calls).toEqual([]);
      expect(manager.list()).toEqual([]);
      expect(await listManaged({ [LABEL.session]: manager.sessionId })).toEqual([]);
      return caught as SandboxError;
    },
    { engine, overrides: configOverrides },
  );
}

describe('invariants: rejected with POLICY_VIOLATION before any engine call', () => {
  test.concurrent('start option privileged: true', async () => {
    const e = await rejectedStart({ privileged: true } as unknown as StartOptions);
    expect(e.code).toBe('POLICY_VIOLATION');
    expect(e.message).toMatch(/privileged/);
    expect(e.data.rule).toBe('noPrivileged');
  });

  test.concurrent("start option network: 'host'", async () => {
    const e = await rejectedStart({ network: 'host' } as unknown as StartOptions);
    expect(e.code).toBe('POLICY_VIOLATION');
    expect(e.message).toMatch(/host/);
    expect(e.data.rule).toBe('noHostNamespaces');
  });

  test.concurrent('host PID / IPC / UTS namespaces and devices as start options', async () => {
    for (const bad of [
      { pidMode: 'host' },
      { ipc: 'host' },
      { utsMode: 'host' },
      { devices: ['/dev/sda'] },
      { securityOpt: ['seccomp=unconfined'] },
    ]) {
      const e = await rejectedStart(bad as unknown as StartOptions);
      expect([Object.keys(bad)[0], e.code]).toEqual([Object.keys(bad)[0], 'POLICY_VIOLATION']);
    }
  });

  test.concurrent('a mount of the Docker socket, directly or through a symlink on the allowlist', async () => {
    const allowed = tempDir();
    symlinkSync('/var/run/docker.sock', join(allowed, 'sock'));
    for (const hostPath of ['/var/run/docker.sock', '/run/docker.sock', join(allowed, 'sock'), '/var/lib/docker']) {
      const e = await rejectedStart(
        { mounts: [{ hostPath, containerPath: '/var/run/docker.sock' }] },
        { mountAllow: [{ hostPath: allowed, writable: true }] },
      );
      expect([hostPath, e.code, e.data.rule]).toEqual([hostPath, 'POLICY_VIOLATION', 'noEngineMount']);
    }
  });

  test.concurrent('a mount of / (which holds the engine socket), and / on the mount allowlist', async () => {
    const e = await rejectedStart({ mounts: [{ hostPath: '/', containerPath: '/host' }] }, { mountAllow: [{ hostPath: '/tmp' }] });
    expect(e.code).toBe('POLICY_VIOLATION');
    expect(e.data.rule).toBe('noEngineMount');
  });

  test.concurrent('a mount outside the mount allowlist', async () => {
    const allowed = tempDir();
    const outside = tempDir();
    const e = await rejectedStart(
      { mounts: [{ hostPath: outside, containerPath: '/data' }] },
      { mountAllow: [{ hostPath: allowed, writable: true }] },
    );
    expect(e.code).toBe('POLICY_VIOLATION');
    expect(e.data.rule).toBe('mountAllowlist');
    expect(e.message).toContain('not on the mount allowlist');
  });

  test.concurrent('a symlink inside the allowlist pointing outside it', async () => {
    const allowed = tempDir();
    const outside = tempDir();
    symlinkSync(outside, join(allowed, 'escape'));
    const e = await rejectedStart(
      { mounts: [{ hostPath: join(allowed, 'escape'), containerPath: '/data' }] },
      { mountAllow: [{ hostPath: allowed }] },
    );
    expect(e.code).toBe('POLICY_VIOLATION');
    expect(e.data.rule).toBe('mountAllowlist');
  });

  test.concurrent('a writable mount of a path allowed read-only', async () => {
    const allowed = tempDir();
    const e = await rejectedStart(
      { mounts: [{ hostPath: allowed, containerPath: '/data', writable: true }] },
      { mountAllow: [{ hostPath: allowed, writable: false }] },
    );
    expect(e.code).toBe('POLICY_VIOLATION');
    expect(e.message).toMatch(/read-only/);
  });

  test.concurrent("config override capAdd: ['SYS_ADMIN'] (and a mount allowlist holding an engine path)", async () => {
    const cwd = tempDir();
    let caught: unknown;
    try {
      loadConfig({ cwd, env: {}, overrides: { capAdd: ['SYS_ADMIN'] as unknown as ['NET_RAW'] } });
    } catch (e) {
      caught = e;
    }
    expect(caught).toBeInstanceOf(SandboxError);
    expect((caught as SandboxError).code).toBe('POLICY_VIOLATION');
    expect((caught as SandboxError).message).toMatch(/SYS_ADMIN/);
    expect(errorCode(() => loadConfig({ cwd, env: {}, overrides: { mountAllow: [{ hostPath: '/var/lib/docker' }] } }))).toBe(
      'POLICY_VIOLATION',
    );
    expect(errorCode(() => loadConfig({ cwd, env: {}, overrides: { mountAllow: [{ hostPath: '/' }] } }))).toBe('POLICY_VIOLATION');
    expect(errorCode(() => loadConfig({ cwd, env: { GENAICODE_DOCKER_NETWORK: 'host' } }))).toBe('POLICY_VIOLATION');
    expect(errorCode(() => loadConfig({ cwd, env: {}, overrides: { privileged: true } as unknown as ConfigInput }))).toBe(
      'POLICY_VIOLATION',
    );
  });
});

describe('a started container carries every hardening setting', () => {
  test.concurrent(
    'docker inspect: defaults',
    async () => {
      await withManager(async (manager, config) => {
        const before = Date.now();
        const sb = await manager.start({ ttlSeconds: 600 });
        const c = await inspectContainer(sb.id);
        if (!c) throw new Error('started container not found');
        const h = c.HostConfig;
        expect(h.Privileged).toBe(false);
        expect(h.SecurityOpt).toEqual(expect.arrayContaining([expect.stringMatching(/^no-new-privileges(:true)?$/)]));
        expect(h.CapDrop).toEqual(['ALL']);
        expect(h.CapAdd ?? []).not.toEqual(expect.arrayContaining(['SYS_ADMIN']));
        expect(h.Init).toBe(true);
        expect(h.NetworkMode).toBe('none');
        expect(h.Memory).toBe(config.limits.memory);
        expect(h.Memory).toBe(512 * MIB);
        expect(h.MemorySwap).toBe(512 * MIB);
        expect(h.PidsLimit).toBe(256);
        expect(h.NanoCpus).toBe(1e9);
        expect(h.AutoRemove).toBe(true);
        expect(h.ReadonlyRootfs).toBe(false);
        expect(h.PidMode).toBe('');
        expect(h.UTSMode).toBe('');
        expect(h.IpcMode).not.toBe('host');
        expect(h.Devices ?? []).toEqual([]);
        expect(c.Config.Entrypoint).toEqual(['sleep']);
        expect(c.Config.Cmd).toEqual(['600']);

        const labels = c.Config.Labels ?? {};
        expect(labels[LABEL.managed]).toBe('true');
        expect(labels[LABEL.session]).toBe(manager.sessionId);
        expect(labels[LABEL.owner]).toBe(`${hostname()}:${process.pid}`);
        expect(labels[LABEL.ownerStart]).toBe(processStart(process.pid));
        expect(labels[LABEL.ownerStart]).toMatch(/:\d+$/);
        expect(labels[LABEL.version]).toBe(PACKAGE_VERSION);
        const expires = labels[LABEL.expiresAt] ?? '';
        expect(expires).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
        expect(Date.parse(expires)).toBeGreaterThan(Date.now());
        expect(Date.parse(expires)).toBeGreaterThanOrEqual(before + 600_000 - 1000);
        expect(Date.parse(expires)).toBeLessThanOrEqual(Date.now() + 600_000 + 1000);
        expect(Date.parse(labels[LABEL.createdAt] ?? '')).toBeGreaterThanOrEqual(before - 1000);

        // And from inside: no capability beyond the base set, no-new-privileges on.
        const status = await sb.exec("grep -E '^(CapEff|NoNewPrivs):' /proc/self/status");
        const capEff = BigInt(`0x${/CapEff:\s*([0-9a-f]+)/.exec(status.stdout)?.[1] ?? 'ffffffffff'}`);
        const SYS_ADMIN = 21n;
        expect((capEff >> SYS_ADMIN) & 1n).toBe(0n);
        expect(status.stdout).toMatch(/NoNewPrivs:\s*1/);
      });
    },
    60_000,
  );

  test.concurrent(
    'docker inspect: configured values (limits, network, read-only root, added capability, mount)',
    async () => {
      const shared = tempDir();
      writeFileSync(join(shared, 'hello.txt'), 'from the host\n');
      mkdirSync(join(shared, 'sub'));
      await withManager(
        async (manager) => {
          const sb = await manager.start({
            memoryBytes: 96 * MIB,
            cpus: 0.5,
            pids: 100,
            network: 'bridge',
            mounts: [{ hostPath: shared, containerPath: '/data' }],
          });
          const c = await inspectContainer(sb.id);
          if (!c) throw new Error('started container not found');
          const h = c.HostConfig;
          expect(h).toMatchObject({
            Memory: 96 * MIB,
            MemorySwap: 96 * MIB,
            NanoCpus: 5e8,
            PidsLimit: 100,
            NetworkMode: 'bridge',
            ReadonlyRootfs: true,
            AutoRemove: true,
            Privileged: false,
            Init: true,
          });
          expect(h.CapDrop).toEqual(['ALL']);
          expect(h.CapAdd).toEqual(expect.arrayContaining(['NET_RAW']));
          expect(Object.keys(h.Tmpfs ?? {}).sort()).toEqual(['/tmp']);
          // The working folder: a tmpfs volume (the archive API reaches it), capped, nosuid, nodev.
          expect(h.Mounts ?? []).toEqual([
            expect.objectContaining({ Type: 'bind', Source: realpathSync(shared), Target: '/data', ReadOnly: true }),
            expect.objectContaining({
              Type: 'volume',
              Target: '/workspace',
              VolumeOptions: expect.objectContaining({
                DriverConfig: {
                  Name: 'local',
                  Options: { type: 'tmpfs', device: 'tmpfs', o: expect.stringMatching(/^nosuid,nodev,size=\d+$/) },
                },
              }),
            }),
          ]);
          // The mount is read-only inside, as requested by default.
          expect((await sb.exec('cat /data/hello.txt')).stdout).toBe('from the host\n');
          const write = await sb.exec('touch /data/new');
          expect(write.exitCode).not.toBe(0);
          expect(write.stderr).toMatch(/Read-only file system/);
        },
        { overrides: { readOnlyRoot: true, capAdd: ['NET_RAW'], mountAllow: [{ hostPath: shared, writable: true }] } },
      );
    },
    60_000,
  );

  test.concurrent(
    'a writable mount of a path allowed writable is writable',
    async () => {
      const shared = tempDir();
      // A folder of a non-root user: with a writable mount the container runs as its owner, never root.
      if (process.getuid?.() === 0) chownSync(shared, 1000, 1000);
      await withManager(
        async (manager) => {
          const sb = await manager.start({ mounts: [{ hostPath: join(shared, '.'), containerPath: '/out', writable: true }] });
          expect(await sb.exec('echo written > /out/result.txt')).toMatchObject({ exitCode: 0 });
          expect(readFileSync(join(shared, 'result.txt'), 'utf8')).toBe('written\n');
        },
        { overrides: { mountAllow: [{ hostPath: shared, writable: true }] } },
      );
    },
    60_000,
  );
});

describe('image allowlist', () => {
  test.concurrent('an image not on the list: IMAGE_NOT_ALLOWED, no engine call, no container', async () => {
    const e = await rejectedStart({ image: 'evil/miner:latest' });
    expect(e.code).toBe('IMAGE_NOT_ALLOWED');
    expect(e.message).toContain('evil/miner:latest');
    expect(e.data.image).toBe('evil/miner:latest');
    // Also from the configured default image.
    const e2 = await rejectedStart({}, { images: { default: 'evil/miner:latest' } });
    expect(e2.code).toBe('IMAGE_NOT_ALLOWED');
    // A registry prefix does not sneak an image past the list.
    const e3 = await rejectedStart({ image: 'registry.example.com/genaicode-docker/sandbox-minimal:latest' });
    expect(e3.code).toBe('IMAGE_NOT_ALLOWED');
  });

  test.concurrent('an empty allowlist allows nothing', async () => {
    const e = await rejectedStart({ image: MINIMAL_IMAGE }, { images: { allow: [] } });
    expect(e.code).toBe('IMAGE_NOT_ALLOWED');
  });

  test.concurrent('glob patterns: * stays in one segment, ** crosses them, :latest is implied', () => {
    const allow = ['genaicode-docker/sandbox-*', 'library-ish/**', 'busybox:1.*', 'localhost:5000/team/*:v?'];
    const ok = (image: string) => {
      try {
        checkImageAllowed(image, allow);
        return true;
      } catch (e) {
        expect(e).toMatchObject({ code: 'IMAGE_NOT_ALLOWED' });
        return false;
      }
    };
    expect(ok('genaicode-docker/sandbox-minimal:latest')).toBe(true);
    expect(ok('genaicode-docker/sandbox-minimal')).toBe(true);
    expect(ok('genaicode-docker/sandbox-python:3.12')).toBe(true);
    expect(ok('genaicode-docker/other')).toBe(false);
    expect(ok('genaicode-docker/sandbox-x/nested:latest')).toBe(false);
    expect(ok('library-ish/a/b/c:tag')).toBe(true);
    expect(ok('busybox:1.36')).toBe(true);
    expect(ok('docker.io/library/busybox:1.36')).toBe(true);
    expect(ok('busybox:latest')).toBe(false);
    expect(ok('busybox')).toBe(false);
    expect(ok('localhost:5000/team/app:v1')).toBe(true);
    expect(ok('localhost:5000/team/app:v10')).toBe(false);
    expect(ok('localhost:5000/other/app:v1')).toBe(false);
  });

  test.concurrent(
    'a glob pattern lets a real start through',
    async () => {
      await withManager(
        async (manager) => {
          const sb = await manager.start({ image: 'genaicode-docker/sandbox-minimal' });
          expect((await sb.exec('echo globbed')).stdout).toBe('globbed\n');
          await expect(manager.start({ image: 'genaicode-docker/sandbox-python:latest' })).rejects.toMatchObject({
            code: 'IMAGE_NOT_ALLOWED',
          });
        },
        { overrides: { images: { allow: ['genaicode-docker/*-minimal'] } } },
      );
    },
    60_000,
  );
});
