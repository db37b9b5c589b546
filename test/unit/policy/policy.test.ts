import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  checkConfigInvariants,
  checkImageAllowed,
  checkMounts,
  checkProjectMount,
  INVARIANTS,
  normalizeImageRef,
  touchesEnginePath,
} from '../../../src/policy/policy.js';
import { removeTempDirs, syncSandboxError, tempDir } from '../helpers.js';

afterAll(removeTempDirs);

function allowed(image: string, allow: string[]): boolean {
  try {
    checkImageAllowed(image, allow);
    return true;
  } catch (e) {
    if ((e as { code?: string }).code === 'IMAGE_NOT_ALLOWED') return false;
    throw e;
  }
}

describe('image allowlist', () => {
  test('normalizeImageRef adds the implicit :latest, keeps tags, digests and registry ports', () => {
    expect(normalizeImageRef('python')).toBe('python:latest');
    expect(normalizeImageRef('python:3.12')).toBe('python:3.12');
    expect(normalizeImageRef('localhost:5000/tools/img')).toBe('localhost:5000/tools/img:latest');
    expect(normalizeImageRef('localhost:5000/tools/img:1')).toBe('localhost:5000/tools/img:1');
    expect(normalizeImageRef('alpine@sha256:abc')).toBe('alpine@sha256:abc');
  });

  test('implicit :latest: "python" matches python:* and python:latest, and "python" matches python', () => {
    expect(allowed('python', ['python:*'])).toBe(true);
    expect(allowed('python', ['python:latest'])).toBe(true);
    expect(allowed('python:latest', ['python'])).toBe(true);
    expect(allowed('python:3.12', ['python'])).toBe(false);
    expect(allowed('python:3.12', ['python:3.11'])).toBe(false);
  });

  test('docker.io/library/x and x are the same image (image side)', () => {
    expect(allowed('docker.io/library/python:3.12', ['python:*'])).toBe(true);
    expect(allowed('docker.io/python:3.12', ['python:*'])).toBe(true);
    expect(allowed('library/python', ['python:*'])).toBe(true);
  });

  test('docker.io/library/x and x are the same image (pattern side)', () => {
    expect(allowed('python:3.12', ['docker.io/library/python:*'])).toBe(true);
    expect(allowed('python', ['docker.io/library/python:latest'])).toBe(true);
  });

  test('a look-alike registry or namespace does not match a short name', () => {
    expect(allowed('evil.io/library/python:3', ['python:*'])).toBe(false);
    expect(allowed('evil/python:3', ['python:*'])).toBe(false);
    expect(allowed('python-evil:3', ['python:*'])).toBe(false);
  });

  test('* stays within one path segment; ** crosses segments', () => {
    expect(allowed('genaicode-docker/sandbox-minimal:latest', ['genaicode-docker/*'])).toBe(true);
    expect(allowed('genaicode-docker/sandbox-minimal', ['genaicode-docker/*'])).toBe(true);
    expect(allowed('genaicode-docker/a/b:1', ['genaicode-docker/*'])).toBe(false);
    expect(allowed('ghcr.io/acme/team/tool:1', ['ghcr.io/acme/**'])).toBe(true);
    expect(allowed('ghcr.io/other/tool:1', ['ghcr.io/acme/**'])).toBe(false);
  });

  test('a registry with a port', () => {
    expect(allowed('localhost:5000/tools/img:1.0', ['localhost:5000/tools/*'])).toBe(true);
    expect(allowed('localhost:5000/tools/img', ['localhost:5000/tools/img'])).toBe(true);
    expect(allowed('localhost:5001/tools/img:1.0', ['localhost:5000/tools/*'])).toBe(false);
  });

  test('IMAGE_NOT_ALLOWED lists the allowlist and carries the image', () => {
    const e = syncSandboxError(() => checkImageAllowed('evil/miner:1', ['alpine:*', 'busybox:*']));
    expect(e.code).toBe('IMAGE_NOT_ALLOWED');
    expect(e.message).toContain('alpine:*, busybox:*');
    expect(e.data).toEqual({ image: 'evil/miner:1', allowed: ['alpine:*', 'busybox:*'] });
    expect(syncSandboxError(() => checkImageAllowed('alpine', [])).message).toContain('(empty)');
  });

  test.each(['', ' alpine', 'alpine latest', '-alpine', 'alpine;rm -rf /', '$(id)', 'a'.repeat(256)])(
    'invalid reference %p is INVALID_ARGUMENT',
    (ref) => {
      const e = syncSandboxError(() => checkImageAllowed(ref, ['**']));
      expect(e.code).toBe('INVALID_ARGUMENT');
      expect(e.message).toContain('is not a valid image reference');
    },
  );
});

describe('touchesEnginePath', () => {
  test.each([
    '/var/run/docker.sock',
    '/run/docker.sock',
    '/var/lib/docker/volumes/x',
    '/proc',
    '/proc/1/root',
    '/sys/fs',
    '/dev/sda',
    '/run/user/1000/docker.sock',
    '/run/user/1000/podman/podman.sock',
  ])('engine path or inside one: %p', (p) => expect(touchesEnginePath(p)).toBe(true));

  test.each(['/', '/var', '/run', '/var/lib'])('a parent of an engine path is rejected too: %p', (p) => {
    expect(touchesEnginePath(p)).toBe(true);
  });

  test.each(['/run/user', '/run/user/1000'])(
    'a folder holding a rootless engine socket (/run/user/<uid>/docker.sock) is rejected: %p',
    (p) => {
      expect(touchesEnginePath(p)).toBe(true);
    },
  );

  test.each(['/home/dev/project', '/var/lib/dockerfoo', '/varx', '/srv/data', '/run/user/1000/other'])('unrelated path %p is fine', (p) => {
    expect(touchesEnginePath(p)).toBe(false);
  });

  test('an extra path (the configured socket) counts too', () => {
    expect(touchesEnginePath('/srv/engine', ['/srv/engine/engine.sock'])).toBe(true);
    expect(touchesEnginePath('/srv/engine')).toBe(false);
  });

  test('a child whose name starts with ".." is still inside the engine path', () => {
    expect(touchesEnginePath('/var/lib/docker/..data')).toBe(true);
    expect(touchesEnginePath('/proc/..x')).toBe(true);
  });
});

describe('checkMounts', () => {
  function layout() {
    const root = tempDir('gcd-mounts-');
    const ro = join(root, 'ro');
    const rw = join(root, 'rw');
    mkdirSync(join(ro, 'sub'), { recursive: true });
    mkdirSync(rw);
    writeFileSync(join(ro, 'sub', 'f.txt'), 'x');
    return {
      root,
      ro,
      rw,
      rules: [
        { hostPath: ro, writable: false },
        { hostPath: rw, writable: true },
      ],
    };
  }

  test('a path under an allowlisted prefix is accepted, read-only by default', () => {
    const { ro, rules } = layout();
    expect(checkMounts([{ hostPath: join(ro, 'sub'), containerPath: '/data' }], rules)).toEqual([
      { hostPath: join(ro, 'sub'), containerPath: '/data', writable: false },
    ]);
    expect(checkMounts([{ hostPath: ro, containerPath: '/data' }], rules)).toHaveLength(1);
  });

  test('writable only where the rule allows it', () => {
    const { ro, rw, rules } = layout();
    expect(checkMounts([{ hostPath: rw, containerPath: '/out', writable: true }], rules)).toEqual([
      { hostPath: rw, containerPath: '/out', writable: true },
    ]);
    const e = syncSandboxError(() => checkMounts([{ hostPath: ro, containerPath: '/data', writable: true }], rules));
    expect(e.code).toBe('POLICY_VIOLATION');
    expect(e.data.rule).toBe('mountAllowlist');
    expect(e.message).toContain('read-only only');
  });

  test('not on the allowlist, including a sibling sharing the prefix', () => {
    const { root, ro, rules } = layout();
    mkdirSync(`${ro}-evil`);
    for (const hostPath of [`${ro}-evil`, root, '/etc']) {
      const e = syncSandboxError(() => checkMounts([{ hostPath, containerPath: '/data' }], rules));
      expect(e.code).toBe('POLICY_VIOLATION');
      expect(e.data.rule).toBe('mountAllowlist');
    }
  });

  test('a symlink inside the allowlist pointing at /proc is resolved and rejected as an engine path', () => {
    const { ro, rules } = layout();
    const link = join(ro, 'innocent');
    symlinkSync('/proc', link);
    const e = syncSandboxError(() => checkMounts([{ hostPath: link, containerPath: '/data' }], rules));
    expect(e.code).toBe('POLICY_VIOLATION');
    expect(e.data.rule).toBe('noEngineMount');
    expect(e.message).toContain(INVARIANTS.noEngineMount);
  });

  test('a symlink inside the allowlist pointing outside it is rejected', () => {
    const { ro, rules } = layout();
    const outside = tempDir('gcd-outside-');
    const link = join(ro, 'escape');
    symlinkSync(outside, link);
    const e = syncSandboxError(() => checkMounts([{ hostPath: link, containerPath: '/data' }], rules));
    expect(e.data.rule).toBe('mountAllowlist');
  });

  test('an allowlist entry that is itself a symlink matches its target', () => {
    const { root, ro } = layout();
    const alias = join(root, 'alias');
    symlinkSync(ro, alias);
    expect(checkMounts([{ hostPath: join(ro, 'sub'), containerPath: '/d' }], [{ hostPath: alias, writable: false }])[0]?.hostPath).toBe(
      join(ro, 'sub'),
    );
  });

  test('the engine socket given by the adapter is never mountable, even when allowlisted', () => {
    const { ro, rules } = layout();
    const sock = join(ro, 'engine.sock');
    writeFileSync(sock, '');
    const e = syncSandboxError(() => checkMounts([{ hostPath: ro, containerPath: '/data' }], rules, { engineSocket: sock }));
    expect(e.data.rule).toBe('noEngineMount');
  });

  test('a relative container path is INVALID_ARGUMENT', () => {
    const { ro, rules } = layout();
    const e = syncSandboxError(() => checkMounts([{ hostPath: ro, containerPath: 'data' }], rules));
    expect(e.code).toBe('INVALID_ARGUMENT');
    expect(e.message).toContain('"data"');
  });

  test('nothing is mountable with an empty allowlist', () => {
    const { ro } = layout();
    expect(syncSandboxError(() => checkMounts([{ hostPath: ro, containerPath: '/d' }], [])).data.rule).toBe('mountAllowlist');
    expect(checkMounts([], [])).toEqual([]);
  });
});

describe('checkConfigInvariants', () => {
  test.each<[Record<string, unknown>, keyof typeof INVARIANTS]>([
    [{ privileged: true }, 'noPrivileged'],
    [{ pidMode: 'host' }, 'noHostNamespaces'],
    [{ ipc: 'host' }, 'noHostNamespaces'],
    [{ networkMode: 'container:abc' }, 'noHostNamespaces'],
    [{ devices: ['/dev/kvm'] }, 'noDevices'],
    [{ securityOpt: ['seccomp=unconfined'] }, 'noNewPrivileges'],
    [{ capAdd: ['CAP_SYS_PTRACE'] }, 'capabilities'],
    [{ capAdd: ['all'] }, 'capabilities'],
  ])('%p breaks %s', (raw, rule) => {
    const e = syncSandboxError(() => checkConfigInvariants(raw, 'start options'));
    expect(e.code).toBe('POLICY_VIOLATION');
    expect(e.data.rule).toBe(rule);
    expect(e.message).toContain('start options');
  });

  test('harmless values pass', () => {
    expect(() => checkConfigInvariants({ privileged: false, network: 'bridge', capAdd: ['NET_RAW'] }, 'x')).not.toThrow();
  });
});

describe('projectBinds (the project mount)', () => {
  test('rw and scratch mount an overlay of the project whose upper folder is ours, outside it; ro binds it read-only; the plugin folder itself is refused', async () => {
    const { projectBinds } = await import('../../../src/project/project-mount.js');
    const { mkdtempSync, mkdirSync, existsSync } = await import('node:fs');
    const { tmpdir } = await import('node:os');
    const { join } = await import('node:path');
    const root = mkdtempSync(join(tmpdir(), 'gcd-binds-'));
    const state = mkdtempSync(join(tmpdir(), 'gcd-state-'));
    const plugin = join(root, 'node_modules', 'genaicode-docker');
    mkdirSync(plugin, { recursive: true });
    const who = { name: 'c1', owner: 'h:1' };
    for (const mount of ['rw', 'scratch'] as const) {
      const b = projectBinds(root, '/workspace', mount, state, who, plugin);
      expect(b.binds).toEqual([]);
      expect(b.overlay?.volume).toMatchObject({ containerPath: '/workspace', lowerDir: root });
      expect(b.overlay?.upper.startsWith(join(state, 'overlays'))).toBe(true);
      expect(existsSync(b.overlay?.upper ?? '')).toBe(true);
      expect(b.overlay?.record).toMatchObject({ projectRoot: root, container: 'c1', mode: mount });
    }
    expect(projectBinds(root, '/workspace', 'ro', state, who, plugin).binds).toEqual([
      { hostPath: root, containerPath: '/workspace', readOnly: true },
    ]);
    expect(() => projectBinds(plugin, '/workspace', 'rw', state, who, plugin)).toThrow(/inside the plugin's own folder/);
    expect(() => projectBinds(join(root, 'a,b'), '/workspace', 'scratch', state, who, plugin)).toThrow(/comma/);
  });
});

describe('checkProjectMount', () => {
  test('up to project.mount; more is refused with where the limit is raised, the user’s own configuration', () => {
    expect(checkProjectMount(undefined, 'ro')).toBe('ro');
    expect(checkProjectMount('ro', 'scratch')).toBe('ro');
    for (const [requested, limit] of [
      ['scratch', 'ro'],
      ['rw', 'scratch'],
      ['ro', 'none'],
    ] as const) {
      const e = syncSandboxError(() => checkProjectMount(requested, limit));
      expect(e).toMatchObject({ code: 'POLICY_VIOLATION', data: { rule: 'projectMount' } });
      expect(e.message).toContain(`project.mount allows at most ${limit}`);
      expect(e.message).toContain(`"project": { "mount": "${requested}" }`);
      expect(e.message).toContain(`GENAICODE_DOCKER_PROJECT_MOUNT=${requested}`);
    }
  });
});
