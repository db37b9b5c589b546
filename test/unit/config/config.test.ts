import { homedir } from 'node:os';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadConfig } from '../../../src/config/load-config.js';
import {
  CONFIG_FILE_NAME,
  DEFAULT_ALLOWED_IMAGES,
  DEFAULT_IMAGE,
  parseByteSize,
  type ConfigInput,
} from '../../../src/config/config-schema.js';
import { INVARIANTS } from '../../../src/policy/policy.js';
import { removeTempDirs, syncSandboxError, tempDir } from '../helpers.js';

const MiB = 1024 ** 2;
const GiB = 1024 ** 3;

afterAll(removeTempDirs);

/** A project: a root with `.genaicoderc`, a nested working folder, and optionally a config file. */
function project(file?: unknown): { root: string; nested: string; file: string } {
  const root = tempDir('gcd-cfg-');
  writeFileSync(join(root, '.genaicoderc'), '{}');
  const nested = join(root, 'packages', 'app', 'src');
  mkdirSync(nested, { recursive: true });
  const path = join(root, CONFIG_FILE_NAME);
  if (file !== undefined) writeFileSync(path, typeof file === 'string' ? file : JSON.stringify(file));
  return { root, nested, file: path };
}

describe('loadConfig: defaults', () => {
  test('every default is applied, sizes in bytes, paths absolute', () => {
    const { root } = project();
    const c = loadConfig({ cwd: root, env: {} });
    expect(c.projectRoot).toBe(root);
    expect(c.sources).toEqual(['defaults']);
    expect(c.engine).toEqual({});
    expect(c.images).toEqual({
      allow: [...DEFAULT_ALLOWED_IMAGES],
      default: DEFAULT_IMAGE,
      pull: true,
      localOnly: ['genaicode-docker/*'],
      languages: {},
      prePull: 'project',
    });
    expect(c.limits).toEqual({ memory: 512 * MiB, cpus: 1, pids: 256, disk: 2 * GiB });
    expect(c.network).toBe('none');
    expect(c.readOnlyRoot).toBe(false);
    expect(c.tmpfsSize).toBe(64 * MiB);
    expect(c.capAdd).toEqual([]);
    expect(c.user).toBeUndefined();
    expect(c.workdir).toBe('/workspace');
    expect(c.mountAllow).toEqual([]);
    expect(c.ttlSeconds).toBe(7200);
    expect(c.exec).toEqual({ timeoutMs: 300_000, maxBytes: 16 * 1024, maxLines: 500, keptShell: true, maxProcesses: 8 });
    expect(c.logs).toEqual({
      dir: join(homedir(), '.local', 'state', 'genaicode-docker', 'logs'),
      maxTotalBytes: GiB,
      maxAgeDays: 14,
      maxCommandBytes: 64 * 1024 ** 2,
      maxSessionBytes: GiB,
      minFreeBytes: GiB,
    });
    expect(c.allowRootWithWritableMounts).toBe(false);
    expect(c.plugin).toEqual({ confirmStart: true, summaryThresholdBytes: 2048 });
    expect(c.task).toEqual({ maxCommands: 25, budgetMs: 15 * 60_000, network: 'bridge' });
  });
});

describe('loadConfig: the config file', () => {
  test('is found next to .genaicoderc, searched up from a nested working folder', () => {
    const p = project({ limits: { memory: '256m' }, readOnlyRoot: true });
    const c = loadConfig({ cwd: p.nested, env: {} });
    expect(c.projectRoot).toBe(p.root);
    expect(c.limits.memory).toBe(256 * MiB);
    expect(c.readOnlyRoot).toBe(true);
    expect(c.sources).toEqual(['defaults', p.file]);
  });

  test('is found in the working folder when there is no .genaicoderc', () => {
    const dir = tempDir('gcd-cfg-cwd-');
    writeFileSync(join(dir, CONFIG_FILE_NAME), JSON.stringify({ limits: { pids: 99 } }));
    const c = loadConfig({ cwd: dir, env: {} });
    expect(c.projectRoot).toBe(dir);
    expect(c.limits.pids).toBe(99);
    expect(c.sources).toEqual(['defaults', join(dir, CONFIG_FILE_NAME)]);
  });

  test('GENAICODE_DOCKER_CONFIG points at a file; a missing one is INVALID_CONFIG', () => {
    const p = project();
    const other = join(p.root, 'custom.json');
    writeFileSync(other, JSON.stringify({ ttlSeconds: 60 }));
    expect(loadConfig({ cwd: p.nested, env: { GENAICODE_DOCKER_CONFIG: other } }).ttlSeconds).toBe(60);
    const e = syncSandboxError(() => loadConfig({ cwd: p.root, env: { GENAICODE_DOCKER_CONFIG: 'nope.json' } }));
    expect(e.code).toBe('INVALID_CONFIG');
    expect(e.message).toContain('GENAICODE_DOCKER_CONFIG');
    expect(e.message).toContain(join(p.root, 'nope.json'));
  });

  test('a file that is not JSON is INVALID_CONFIG naming the file', () => {
    const p = project('{ "limits": ');
    const e = syncSandboxError(() => loadConfig({ cwd: p.root, env: {} }));
    expect(e.code).toBe('INVALID_CONFIG');
    expect(e.message).toContain(p.file);
  });
});

describe('loadConfig: environment', () => {
  test('numbers, booleans, lists and strings', () => {
    const { root } = project();
    const c = loadConfig({
      cwd: root,
      env: {
        GENAICODE_DOCKER_CPUS: '1.5',
        GENAICODE_DOCKER_PIDS: '64',
        GENAICODE_DOCKER_TIMEOUT_MS: '5000',
        GENAICODE_DOCKER_PULL: 'no',
        GENAICODE_DOCKER_READ_ONLY_ROOT: 'TRUE',
        GENAICODE_DOCKER_CONFIRM_START: '0',
        GENAICODE_DOCKER_ALLOWED_IMAGES: ' alpine:* , ghcr.io/acme/**,,',
        GENAICODE_DOCKER_MEMORY: '256m',
        GENAICODE_DOCKER_NETWORK: 'bridge',
        GENAICODE_DOCKER_HOST: 'tcp://10.0.0.5:2375',
        UNRELATED: 'ignored',
      },
    });
    expect(c.limits).toEqual({ memory: 256 * MiB, cpus: 1.5, pids: 64, disk: 2 * GiB });
    expect(c.exec.timeoutMs).toBe(5000);
    expect(c.images.pull).toBe(false);
    expect(c.readOnlyRoot).toBe(true);
    expect(c.plugin.confirmStart).toBe(false);
    expect(c.images.allow).toEqual(['alpine:*', 'ghcr.io/acme/**']);
    expect(c.network).toBe('bridge');
    expect(c.engine.host).toBe('tcp://10.0.0.5:2375');
    expect(c.sources).toEqual(['defaults', 'environment']);
  });

  test('an unknown GENAICODE_DOCKER_ variable is rejected with a message naming it', () => {
    const { root } = project();
    const e = syncSandboxError(() => loadConfig({ cwd: root, env: { GENAICODE_DOCKER_X: '1' } }));
    expect(e.code).toBe('INVALID_CONFIG');
    expect(e.message).toContain('Unknown environment variable GENAICODE_DOCKER_X;');
  });

  test.each([
    ['GENAICODE_DOCKER_PIDS', 'many', 'must be a number'],
    ['GENAICODE_DOCKER_CPUS', '', 'must be a number'],
    ['GENAICODE_DOCKER_PULL', 'maybe', 'must be true or false'],
  ])('%s=%p is INVALID_CONFIG naming the variable', (name, value, expected) => {
    const { root } = project();
    const e = syncSandboxError(() => loadConfig({ cwd: root, env: { [name]: value } }));
    expect(e.code).toBe('INVALID_CONFIG');
    expect(e.message).toContain(name);
    expect(e.message).toContain(expected);
    expect(e.message).toContain(JSON.stringify(value));
  });
});

describe('loadConfig: precedence defaults < file < env < overrides', () => {
  test('each value comes from the latest source that sets it; objects merge, arrays replace', () => {
    const p = project({
      limits: { memory: '256m', cpus: 0.5, pids: 100 },
      exec: { timeoutMs: 5000 },
      images: { allow: ['python:3*', 'node:*'] },
      workdir: '/src',
    });
    const c = loadConfig({
      cwd: p.root,
      env: {
        GENAICODE_DOCKER_CPUS: '3',
        GENAICODE_DOCKER_PIDS: '200',
        GENAICODE_DOCKER_MAX_BYTES: '4096',
        GENAICODE_DOCKER_ALLOWED_IMAGES: 'c:*',
      },
      overrides: { limits: { pids: 300 } },
    });
    expect(c.limits).toEqual({ memory: 256 * MiB, cpus: 3, pids: 300, disk: 2 * GiB });
    expect(c.exec).toEqual({ timeoutMs: 5000, maxBytes: 4096, maxLines: 500, keptShell: true, maxProcesses: 8 });
    expect(c.images.allow).toEqual(['c:*']);
    expect(c.workdir).toBe('/src');
    expect(c.network).toBe('none');
    expect(c.sources).toEqual(['defaults', p.file, 'environment', 'options']);
  });
});

describe('loadConfig: invalid values are INVALID_CONFIG naming field, source and expected value', () => {
  test('limits.memory "lots" in the file', () => {
    const p = project({ limits: { memory: 'lots' } });
    const e = syncSandboxError(() => loadConfig({ cwd: p.root, env: {} }));
    expect(e.code).toBe('INVALID_CONFIG');
    expect(e.message).toContain(`${p.file}: limits.memory`);
    expect(e.message).toContain('expected a size like 512m, 1g or a number of bytes, got "lots"');
  });

  test('limits.memory out of bounds in the options', () => {
    const { root } = project();
    const e = syncSandboxError(() => loadConfig({ cwd: root, env: {}, overrides: { limits: { memory: '1k' } } }));
    expect(e.code).toBe('INVALID_CONFIG');
    expect(e.message).toContain('options: limits.memory');
    expect(e.message).toContain('expected between 8m and 64g, got "1k"');
  });

  test('network "wifi" from the environment', () => {
    const { root } = project();
    const e = syncSandboxError(() => loadConfig({ cwd: root, env: { GENAICODE_DOCKER_NETWORK: 'wifi' } }));
    expect(e.code).toBe('INVALID_CONFIG');
    expect(e.message).toContain('environment: GENAICODE_DOCKER_NETWORK must be one of "none", "bridge", got "wifi"');
  });

  test('an unknown field in the file, nested', () => {
    const p = project({ limits: { memroy: '1g' } });
    const e = syncSandboxError(() => loadConfig({ cwd: p.root, env: {} }));
    expect(e.code).toBe('INVALID_CONFIG');
    expect(e.message).toContain(`${p.file}: unknown field limits.memroy`);
  });

  test('an unknown top-level field in the file', () => {
    const p = project({ imagez: ['x'] });
    const e = syncSandboxError(() => loadConfig({ cwd: p.root, env: {} }));
    expect(e.message).toContain(`${p.file}: unknown field imagez`);
  });

  test('capAdd outside the addable set (not dangerous) is INVALID_CONFIG', () => {
    const p = project({ capAdd: ['CHOWNX'] });
    const e = syncSandboxError(() => loadConfig({ cwd: p.root, env: {} }));
    expect(e.code).toBe('INVALID_CONFIG');
    expect(e.message).toContain('capAdd.0');
  });
});

describe('loadConfig: invariant-breaking values are POLICY_VIOLATION naming the rule', () => {
  test('privileged: true in the file', () => {
    const p = project({ privileged: true });
    const e = syncSandboxError(() => loadConfig({ cwd: p.root, env: {} }));
    expect(e.code).toBe('POLICY_VIOLATION');
    expect(e.data.rule).toBe('noPrivileged');
    expect(e.message).toContain(INVARIANTS.noPrivileged);
    expect(e.message).toContain(p.file);
  });

  test('network "host" from the environment', () => {
    const { root } = project();
    const e = syncSandboxError(() => loadConfig({ cwd: root, env: { GENAICODE_DOCKER_NETWORK: 'host' } }));
    expect(e.code).toBe('POLICY_VIOLATION');
    expect(e.data.rule).toBe('noHostNamespaces');
    expect(e.message).toContain(INVARIANTS.noHostNamespaces);
    expect(e.message).toContain('environment');
  });

  test('network "host" for tasks in the file', () => {
    const p = project({ task: { network: 'host' } });
    const e = syncSandboxError(() => loadConfig({ cwd: p.root, env: {} }));
    expect(e.code).toBe('POLICY_VIOLATION');
    expect(e.data.rule).toBe('noHostNamespaces');
  });

  test('capAdd SYS_ADMIN', () => {
    const p = project({ capAdd: ['SYS_ADMIN'] });
    const e = syncSandboxError(() => loadConfig({ cwd: p.root, env: {} }));
    expect(e.code).toBe('POLICY_VIOLATION');
    expect(e.data.rule).toBe('capabilities');
    expect(e.message).toContain('SYS_ADMIN');
    expect(e.message).toContain(INVARIANTS.capabilities);
  });

  test('mountAllow of the Docker socket, in the options', () => {
    const { root } = project();
    const overrides: ConfigInput = { mountAllow: [{ hostPath: '/var/run/docker.sock' }] };
    const e = syncSandboxError(() => loadConfig({ cwd: root, env: {}, overrides }));
    expect(e.code).toBe('POLICY_VIOLATION');
    expect(e.data.rule).toBe('noEngineMount');
    expect(e.message).toContain('/var/run/docker.sock');
    expect(e.message).toContain(INVARIANTS.noEngineMount);
  });

  test('mountAllow of a folder holding the socket (/var/run), in the file', () => {
    const p = project({ mountAllow: [{ hostPath: '/var/run', writable: false }] });
    const e = syncSandboxError(() => loadConfig({ cwd: p.root, env: {} }));
    expect(e.code).toBe('POLICY_VIOLATION');
    expect(e.data.rule).toBe('noEngineMount');
  });

  test('a relative mountAllow is checked where it resolves: against the project root, not process.cwd()', () => {
    // The documented form: relative to the project root. loadConfig resolves it there, but
    // the invariant check resolves it against process.cwd(); started from a subfolder of
    // the project, "../../proc" passes the check and ends up on the allowlist as /proc.
    const p = project();
    const hostPath =
      p.root
        .split('/')
        .slice(1)
        .map(() => '..')
        .join('/') + '/proc';
    const before = process.cwd();
    let resolved: string | undefined;
    let code: string | undefined;
    process.chdir(p.nested);
    try {
      resolved = loadConfig({ cwd: p.nested, env: {}, overrides: { mountAllow: [{ hostPath }] } }).mountAllow[0]?.hostPath;
    } catch (e) {
      code = (e as { code?: string }).code;
    } finally {
      process.chdir(before);
    }
    expect({ hostPath, code, resolved }).toEqual({ hostPath, code: 'POLICY_VIOLATION', resolved: undefined });
  });
});

describe('loadConfig: paths', () => {
  test('logs.dir is resolved under the project root, also from a nested working folder', () => {
    const p = project();
    const own = join(tempDir('gcd-user-cfg-'), 'config.json');
    writeFileSync(own, JSON.stringify({ logs: { dir: 'var/logs' } }));
    expect(loadConfig({ cwd: p.nested, env: { GENAICODE_DOCKER_CONFIG: own } }).logs.dir).toBe(join(p.root, 'var', 'logs'));
    expect(loadConfig({ cwd: p.nested, env: { GENAICODE_DOCKER_LOG_DIR: '/abs/logs' } }).logs.dir).toBe('/abs/logs');
  });

  test('mountAllow host paths are resolved under the project root', () => {
    const p = project();
    const own = join(tempDir('gcd-user-cfg-'), 'config.json');
    writeFileSync(own, JSON.stringify({ mountAllow: [{ hostPath: 'data', writable: true }] }));
    expect(loadConfig({ cwd: p.nested, env: { GENAICODE_DOCKER_CONFIG: own } }).mountAllow).toEqual([
      { hostPath: join(p.root, 'data'), writable: true },
    ]);
  });
});

describe('parseByteSize', () => {
  test.each<[string | number, number | undefined]>([
    [0, 0],
    [1024, 1024],
    ['1024', 1024],
    ['512m', 512 * MiB],
    ['512M', 512 * MiB],
    ['1g', GiB],
    ['1GB', GiB],
    ['64MiB', 64 * MiB],
    ['2k', 2048],
    ['2 kib', 2048],
    [' 10b ', 10],
    ['1.5k', 1536],
    ['0.5g', GiB / 2],
    ['lots', undefined],
    ['', undefined],
    ['-1m', undefined],
    ['1x', undefined],
    ['m', undefined],
    [-1, undefined],
    [1.5, undefined],
    [Number.NaN, undefined],
  ])('%p -> %p', (input, expected) => {
    expect(parseByteSize(input)).toBe(expected);
  });
});
