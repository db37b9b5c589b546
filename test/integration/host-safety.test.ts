/**
 * Host safety against a real engine: what a model's request, a container or a project's
 * config can do to the machine the sandbox runs on. Every class is tried several ways.
 */
import {
  chownSync,
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { DockerEngine, LABEL, loadConfig, SandboxError, type ConfigInput, type StartOptions } from '../../src/index.js';
import { listManaged, RecordingEngine, withManager, engineSuite } from '../support/engine.js';
import { tempDir } from '../support/temp-dirs.js';

engineSuite('host-safety');

const isRoot = process.getuid?.() === 0;
/** A developer's ids, for folders a root test run hands to "the user". */
const DEV = { uid: 1000, gid: 1000 };

/** A folder owned by a non-root user: this one, or (when the tests run as root) DEV. */
function userFolder(prefix: string): string {
  const dir = tempDir(prefix);
  if (isRoot) chownSync(dir, DEV.uid, DEV.gid);
  return dir;
}

async function startError(start: StartOptions, overrides: ConfigInput = {}): Promise<{ error: SandboxError; calls: string[] }> {
  const engine = new RecordingEngine();
  return withManager(
    async (manager) => {
      let caught: unknown;
      try {
        await manager.start(start);
      } catch (e) {
        caught = e;
      }
      expect(caught).toBeInstanceOf(SandboxError);
      expect(await listManaged({ [LABEL.session]: manager.sessionId })).toEqual([]);
      return { error: caught as SandboxError, calls: engine.calls };
    },
    { engine, overrides },
  );
}

describe('image references the engine would answer with a redirect', () => {
  test.concurrent('the adapter itself: a 301 from the real engine is an ENGINE_ERROR, never a request elsewhere or a crash', async () => {
    const engine = new DockerEngine();
    // The engine answers each of these paths with 301 (dot segments): GET /images/<ref>/json.
    for (const ref of ['genaicode-docker/.', 'genaicode-docker/..', 'busybox/./x', 'a/../b']) {
      await expect(engine.hasImage(ref)).rejects.toMatchObject({ name: 'SandboxError', code: 'ENGINE_ERROR', data: { status: 301 } });
    }
  });

  test.concurrent.each([
    ['genaicode-docker/.'],
    ['genaicode-docker/..'],
    ['genaicode-docker/./sandbox-minimal'],
    ['GENAICODE-DOCKER/x'],
    ['genaicode-docker/x:'],
    ['genaicode-docker//x'],
  ])('manager.start({ image: %j }): INVALID_ARGUMENT before any engine call', async (image) => {
    const { error, calls } = await startError({ image }, { images: { allow: ['**'] } });
    expect(error.code).toBe('INVALID_ARGUMENT');
    expect(calls).toEqual([]);
  });
});

describe('pulls: local golden images are never pulled; a failure says what the engine said', () => {
  test.concurrent('a missing genaicode-docker/* image: IMAGE_NOT_FOUND saying how to build it, and no pull', async () => {
    const { error, calls } = await startError({ image: 'genaicode-docker/not-built-here:1' });
    expect(error.code).toBe('IMAGE_NOT_FOUND');
    expect(error.message).toMatch(/never pulled/);
    expect(error.message).toContain('build-offline.sh');
    expect(calls).not.toContain('pullImage');
  });

  test.concurrent(
    'images.localOnly decides: a local-only pattern is never pulled; emptied, the same image is pulled (all on loopback)',
    async () => {
      const image = '127.0.0.1:1/team/golden:1';
      const local = await startError({ image }, { images: { localOnly: ['127.0.0.1:1/team/*'], allow: ['**'] } });
      expect(local.error.code).toBe('IMAGE_NOT_FOUND');
      expect(local.calls).not.toContain('pullImage');
      const pulled = await startError({ image }, { images: { localOnly: [], allow: ['**'] } });
      expect(pulled.calls).toContain('pullImage');
      expect(pulled.error.code).toBe('IMAGE_PULL_FAILED');
    },
  );

  test.concurrent.each([['127.0.0.1:1/nothing-listens-here:1'], ['localhost:1/x/y:2']])(
    '%s: IMAGE_PULL_FAILED with the engine\u2019s reason',
    async (image) => {
      const { error } = await startError({ image }, { images: { allow: ['**'] } });
      expect(error.code).toBe('IMAGE_PULL_FAILED');
      expect(error.message).toMatch(/connection refused|connect/i);
      expect(error.message).not.toMatch(/server error/);
      expect(error.data.image).toBe(image);
    },
  );
});

describe('a writable mount never plants root-owned files on the host', () => {
  const ATTEMPTS = [
    'cp /bin/busybox /out/suid && chmod 4755 /out/suid',
    'cp /bin/busybox /out/sgid && chmod 2755 /out/sgid',
    'cp /bin/busybox /out/owned && chown 0:0 /out/owned',
    'mkdir /out/dir && chmod 6777 /out/dir',
    'cp -p /bin/busybox /out/preserved',
    'echo x > /out/plain',
  ];

  test.concurrent(
    'the default on this host: the container runs as the folder\u2019s non-root user; nothing it makes is root\u2019s',
    async () => {
      const out = userFolder('gcd-rw-');
      await withManager(
        async (manager) => {
          const sb = await manager.start({ mounts: [{ hostPath: out, containerPath: '/out', writable: true }] });
          expect((await sb.exec('id -u')).stdout.trim()).toBe(String(isRoot ? DEV.uid : process.getuid?.()));
          for (const attempt of ATTEMPTS) await sb.exec(attempt);
        },
        { overrides: { mountAllow: [{ hostPath: out, writable: true }] } },
      );
      const made = readdirSync(out);
      expect(made).toEqual(expect.arrayContaining(['plain', 'suid']));
      for (const name of made) {
        const st = lstatSync(join(out, name));
        expect({ name, uid: st.uid }).toEqual({ name, uid: isRoot ? DEV.uid : process.getuid?.() });
        // Set-uid/gid bits may be set, but only for the user's own ids: nothing beyond what the user has.
        if (st.mode & 0o6000) expect(st.uid).not.toBe(0);
      }
    },
  );

  test.concurrent.each([
    // A non-root host never defaults to root: that case exists only where the tests run as root.
    ...(isRoot ? [['a root-owned folder on a root host, no user configured', {}] as const] : []),
    ['user "0:0"', { user: '0:0' }] as const,
    ['user "0"', { user: '0' }] as const,
    ['user "root"', { user: 'root' }] as const,
    ['user "1000" (an image without a passwd entry for it gives gid 0)', { user: '1000' }] as const,
  ])('%s: POLICY_VIOLATION, no container', async (_what, extra) => {
    const out = tempDir('gcd-rw-root-');
    const { error, calls } = await startError(
      { mounts: [{ hostPath: out, containerPath: '/out', writable: true }] },
      { mountAllow: [{ hostPath: out, writable: true }], ...extra },
    );
    expect(error.code).toBe('POLICY_VIOLATION');
    expect(error.data.rule).toBe('noRootWithWritableMounts');
    expect(calls).toEqual([]);
  });

  test.concurrent('with the documented opt-in (allowRootWithWritableMounts), a root-owned folder is written as root', async () => {
    const out = tempDir('gcd-rw-optin-');
    await withManager(
      async (manager) => {
        const sb = await manager.start({ mounts: [{ hostPath: out, containerPath: '/out', writable: true }] });
        expect((await sb.exec('touch /out/f && id -u')).stdout.trim()).toBe(isRoot ? '0' : String(process.getuid?.()));
      },
      { overrides: { mountAllow: [{ hostPath: out, writable: true }], allowRootWithWritableMounts: true } },
    );
    expect(existsSync(join(out, 'f'))).toBe(true);
  });
});

describe('the log folder stays out of every writable mount', () => {
  test.concurrent('a writable mount holding logs.dir: refused before any engine call; the planted links never get a write', async () => {
    const project = userFolder('gcd-proj-');
    const logs = join(project, '.genaicode-docker', 'logs');
    const victim = join(tempDir('gcd-victim-'), '.bashrc');
    writeFileSync(victim, 'original\n');
    mkdirSync(logs, { recursive: true });
    // A configuration that lets a container write where the logs are does not load.
    expect(() =>
      loadConfig({ cwd: project, env: {}, overrides: { mountAllow: [{ hostPath: project, writable: true }], logs: { dir: logs } } }),
    ).toThrow(/logs.dir/);
    // Nor, with the rule on a folder above, can a mount of the folder holding them start.
    const above = join(project, '..');
    for (const mount of [project, join(project, '.genaicode-docker'), logs]) {
      const engine = new RecordingEngine();
      await withManager(
        async (manager) => {
          (manager.config as { mountAllow: Array<{ hostPath: string; writable: boolean }> }).mountAllow = [
            { hostPath: above, writable: true },
          ];
          await expect(manager.start({ mounts: [{ hostPath: mount, containerPath: '/workspace', writable: true }] })).rejects.toMatchObject(
            { code: 'POLICY_VIOLATION', data: { rule: 'logsOutsideMounts' } },
          );
          expect(engine.calls).toEqual([]);
        },
        { engine, overrides: { logs: { dir: logs } } },
      );
    }
    expect(readFileSync(victim, 'utf8')).toBe('original\n');
  });

  test.concurrent('the default log folder is outside the project, so mounting the project writable is fine', async () => {
    const project = userFolder('gcd-proj-');
    writeFileSync(join(project, '.genaicoderc'), '{}');
    const state = tempDir('gcd-state-');
    const config = loadConfig({
      cwd: project,
      env: { XDG_STATE_HOME: state },
      overrides: { mountAllow: [{ hostPath: project, writable: true }] },
    });
    expect(config.logs.dir.startsWith(project)).toBe(false);
    await withManager(
      async (manager) => {
        const sb = await manager.start({ mounts: [{ hostPath: project, containerPath: '/workspace', writable: true }] });
        // The container plants links named like the next logs wherever it can reach.
        const r = await sb.exec(
          'for n in 0002 0003 0004; do ln -s /etc/passwd /workspace/$n-echo.log; ln -s /etc/passwd /workspace/$n-echo.json; done; echo planted',
        );
        expect(r.stdout).toBe('planted\n');
        const next = await sb.exec('echo next');
        expect(next.logPath.startsWith(state)).toBe(true);
        expect(lstatSync(next.logPath).isFile()).toBe(true);
      },
      { config },
    );
    expect(statSync('/etc/passwd').size).toBeGreaterThan(0);
    expect(readFileSync('/etc/passwd', 'utf8')).not.toContain('next');
  });
});

describe('mount allowlist entries are resolved before their rules', () => {
  test.concurrent.each([['/'], ['/etc/..'], ['/proc']])(
    'an entry that is a link to %s is refused when the config loads',
    async (target) => {
      const dir = tempDir('gcd-links-');
      const link = join(dir, 'data');
      symlinkSync(target, link);
      let caught: unknown;
      try {
        loadConfig({ cwd: dir, env: {}, overrides: { mountAllow: [{ hostPath: link, writable: true }] } });
      } catch (e) {
        caught = e;
      }
      expect(caught).toMatchObject({ code: 'POLICY_VIOLATION', data: { rule: 'noEngineMount' } });
    },
  );

  test.concurrent('a link to / given as a rule by a library user (bypassing loadConfig) allows no writable /etc', async () => {
    const dir = tempDir('gcd-links-');
    const link = join(dir, 'everything');
    symlinkSync('/', link);
    const { error, calls } = await startError({ mounts: [{ hostPath: '/etc', containerPath: '/host-etc', writable: true }] }, {});
    expect(error.code).toBe('POLICY_VIOLATION');
    expect(calls).toEqual([]);
    // The same rule injected into a resolved config: still nothing.
    const engine = new RecordingEngine();
    await withManager(
      async (manager) => {
        (manager.config as { mountAllow: Array<{ hostPath: string; writable: boolean }> }).mountAllow = [
          { hostPath: link, writable: true },
        ];
        await expect(manager.start({ mounts: [{ hostPath: '/etc', containerPath: '/host-etc', writable: true }] })).rejects.toMatchObject({
          code: 'POLICY_VIOLATION',
        });
        expect(engine.calls).toEqual([]);
      },
      { engine },
    );
  });
});

describe('a mount swapped for a link between the check and the engine\u2019s mount', () => {
  /** Swaps `path` for a link to `target` just before the engine creates the container: the attacker's best moment. */
  class SwappingEngine extends RecordingEngine {
    constructor(
      private readonly path: string,
      private readonly target: string,
    ) {
      super();
    }
    private swapped = false;
    override async createContainer(spec: Parameters<RecordingEngine['createContainer']>[0]): Promise<string> {
      // Once: a create may be tried twice (with a disk quota, then without where there is none).
      if (!this.swapped) {
        this.swapped = true;
        renameSync(this.path, `${this.path}.checked`);
        symlinkSync(this.target, this.path);
      }
      return super.createContainer(spec);
    }
  }

  test.concurrent.each([
    [
      'a folder of secrets',
      () => {
        const secret = tempDir('gcd-secret-');
        writeFileSync(join(secret, 'id_rsa'), 'PRIVATE');
        return secret;
      },
    ],
    ['/etc', () => '/etc'],
  ])('swapped for a link to %s: POLICY_VIOLATION, the container is removed, nothing was read', async (_what, target) => {
    const allowed = tempDir('gcd-allowed-');
    const sub = join(allowed, 'sub');
    mkdirSync(sub);
    const engine = new SwappingEngine(sub, target());
    let caught: unknown;
    await withManager(
      async (manager) => {
        try {
          await manager.start({ mounts: [{ hostPath: sub, containerPath: '/data' }] });
        } catch (e) {
          caught = e;
        }
        expect(manager.list()).toEqual([]);
        expect(await listManaged({ [LABEL.session]: manager.sessionId })).toEqual([]);
      },
      { engine, overrides: { mountAllow: [{ hostPath: allowed, writable: false }] } },
    );
    expect(caught).toMatchObject({ code: 'POLICY_VIOLATION', data: { rule: 'mountAllowlist' } });
    expect(String((caught as Error).message)).toContain('/data');
    expect(engine.calls).toContain('startContainer');
  });

  test.concurrent('an untouched mount passes the check and works', async () => {
    const allowed = tempDir('gcd-allowed-');
    writeFileSync(join(allowed, 'f'), 'hello');
    await withManager(
      async (manager) => {
        const sb = await manager.start({ mounts: [{ hostPath: allowed, containerPath: '/data' }] });
        expect((await sb.exec('cat /data/f')).stdout).toBe('hello');
      },
      { overrides: { mountAllow: [{ hostPath: allowed, writable: false }] } },
    );
  });
});
