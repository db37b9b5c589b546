/**
 * A project's checked-in `.genaicode-docker.json` may only make the sandbox tighter than
 * the user's settings (or the defaults): every limit, expiry, timeout, threshold,
 * retention and log cap it raises is refused, as are a sweep turned off, registry images,
 * pulls, added capabilities, a network, a writable root or codeExecute turned on, and any
 * logs folder. What it lowers is named to the user when a container starts.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CONFIG_FILE_NAME } from '../../../src/config/config-schema.js';
import { loadConfig } from '../../../src/config/load-config.js';
import { createDockerPlugin } from '../../../src/prompt/create-plugin.js';
import type { Plugin } from '../../../src/prompt/host/genaicode-types.js';
import { FakeEngine } from '../../support/fake-engine.js';
import { FakeHost, handlerProps, ScriptedModel } from '../../support/fake-host.js';
import { removeTempDirs, syncSandboxError, tempDir } from '../helpers.js';

afterEach(removeTempDirs);

function projectWith(content: object): string {
  const root = join(tempDir('gcd-lower-'), 'repo');
  mkdirSync(root, { recursive: true });
  writeFileSync(join(root, '.genaicoderc'), '{"rootDir":"."}');
  writeFileSync(join(root, CONFIG_FILE_NAME), JSON.stringify(content));
  return root;
}

/** A user's own config file with `content`; the environment that points at it. */
function userFile(content: object): NodeJS.ProcessEnv {
  const xdg = tempDir('gcd-xdg-');
  mkdirSync(join(xdg, 'genaicode-docker'));
  writeFileSync(join(xdg, 'genaicode-docker', 'config.json'), JSON.stringify(content));
  return { XDG_CONFIG_HOME: xdg };
}
const noUserFile = () => ({ XDG_CONFIG_HOME: tempDir('gcd-xdg-') });

describe('raising above the defaults is refused, naming the field', () => {
  // The values of the attack: the schema's own maxima, as the finding used them.
  test.each([
    ['limits.memory', { limits: { memory: '64g' } }],
    ['limits.cpus', { limits: { cpus: 64 } }],
    ['limits.pids', { limits: { pids: 65536 } }],
    ['limits.disk', { limits: { disk: 1024 ** 4 } }],
    ['tmpfsSize', { tmpfsSize: '16g' }],
    ['ttlSeconds', { ttlSeconds: 7 * 24 * 3600 }],
    ['exec.timeoutMs', { exec: { timeoutMs: 24 * 3600 * 1000 } }],
    ['exec.maxBytes', { exec: { maxBytes: 16 * 1024 ** 2 } }],
    ['plugin.summaryThresholdBytes', { plugin: { summaryThresholdBytes: 1024 ** 2 } }],
    ['task.budgetMs', { task: { budgetMs: 24 * 3600 * 1000 } }],
    ['logs.maxTotalBytes', { logs: { maxTotalBytes: '1024g' } }],
    ['logs.maxAgeDays', { logs: { maxAgeDays: 3650 } }],
    ['logs.maxCommandBytes', { logs: { maxCommandBytes: '64g' } }],
    ['logs.maxSessionBytes', { logs: { maxSessionBytes: '1024g' } }],
    ['logs.minFreeBytes', { logs: { minFreeBytes: 0 } }],
    ['sweepIntervalMinutes', { sweepIntervalMinutes: 0 }],
    ['sweepIntervalMinutes', { sweepIntervalMinutes: 7 * 24 * 60 }],
    ['codeExecute.memory', { codeExecute: { memory: '64g' } }],
    ['codeExecute.maxTimeoutSeconds', { codeExecute: { maxTimeoutSeconds: 3600 } }],
    ['codeExecute.maxExecutions', { codeExecute: { maxExecutions: 100000 } }],
    ['files.maxWriteBytes', { files: { maxWriteBytes: '16m', maxReadBytes: '16m' } }],
  ])('%s (%j)', (field, content) => {
    const e = syncSandboxError(() => loadConfig({ cwd: projectWith(content), env: noUserFile() }));
    expect(e.code).toBe('INVALID_CONFIG');
    expect(e.data.field).toMatch(new RegExp(`^${field.split('.')[0]}`));
    expect(e.message).toMatch(/a project may only (lower|raise) it|turns off the sweep/);
  });
});

describe('images and pulls', () => {
  test.each([
    ['pre-pull of every language', { images: { prePull: ['python', 'nodejs', 'java', 'go', 'ruby', 'php', 'dotnet', 'powershell'] } }],
    ['pre-pull of one language', { images: { prePull: ['python'] } }],
    ['a language mapped to a registry image', { images: { languages: { python: 'evil.example.com/python:1' } } }],
    ['a language mapped to a Docker Hub image', { images: { languages: { go: 'golang:1.22' } } }],
    ['a default image from a registry', { images: { default: 'python:3.12' } }],
    ["codeExecute's image from a registry", { codeExecute: { image: 'evil/python:1' } }],
    ['an added capability', { capAdd: ['NET_RAW'] }],
  ])('%s: refused', (_what, content) => {
    const e = syncSandboxError(() => loadConfig({ cwd: projectWith(content), env: noUserFile() }));
    expect(e.code).toBe('INVALID_CONFIG');
    expect(e.message).toMatch(/pulled from a registry|start pulls|only drop capabilities/);
  });

  test('with pulls the user turned off, turning them on is refused; turning pre-pull off, or naming a golden image, is fine', () => {
    const e = syncSandboxError(() =>
      loadConfig({ cwd: projectWith({ images: { pull: true } }), env: userFile({ images: { pull: false } }) }),
    );
    expect(e.data.field).toBe('images.pull');
    const c = loadConfig({
      cwd: projectWith({ images: { prePull: false, default: 'genaicode-docker/sandbox-python:latest' } }),
      env: noUserFile(),
    });
    expect(c.images.prePull).toBe(false);
    expect(c.images.default).toBe('genaicode-docker/sandbox-python:latest');
  });
});

describe("within the user's own settings", () => {
  test("a project may go up to what the user's file set, not past it", () => {
    const env = userFile({ limits: { memory: '4g', pids: 1024 }, ttlSeconds: 86400 });
    const c = loadConfig({ cwd: projectWith({ limits: { memory: '2g', pids: 1024 }, ttlSeconds: 3600 }), env });
    expect(c.limits.memory).toBe(2 * 1024 ** 3);
    const e = syncSandboxError(() => loadConfig({ cwd: projectWith({ limits: { memory: '8g' } }), env }));
    expect(e.data.field).toBe('limits.memory');
    expect(e.message).toContain('above the 4 GiB of your own settings');
  });

  test('every setting it lowered is listed, with the value it replaced; one left equal is not', () => {
    const c = loadConfig({
      cwd: projectWith({
        limits: { memory: '256m', cpus: 0.5, pids: 256 },
        ttlSeconds: 600,
        exec: { timeoutMs: 10_000 },
        logs: { maxCommandBytes: '8m', minFreeBytes: '2g' },
      }),
      env: noUserFile(),
    });
    expect(c.projectChanged?.settings).toEqual([
      'limits.memory 256 MiB (was 512 MiB)',
      'limits.cpus 0.5 (was 1)',
      'ttlSeconds 600 (was 7200)',
      'exec.timeoutMs 10000 (was 300000)',
      'logs.maxCommandBytes 8 MiB (was 64 MiB)',
      'logs.minFreeBytes 2 GiB (was 1 GiB)',
    ]);
  });
});

describe('choices move only to the safer side', () => {
  // The user's own file makes the strict choices; the project tries to undo each.
  const strictUser = () =>
    userFile({
      network: 'none',
      readOnlyRoot: true,
      task: { network: 'none' },
      codeExecute: { enabled: false, keepAlive: false, network: 'none' },
      images: { pull: false },
      project: { mount: 'ro' },
    });
  test.each([
    ['network', { network: 'bridge' }, strictUser],
    ['network', { network: 'bridge' }, noUserFile],
    ['task.network', { task: { network: 'bridge' } }, strictUser],
    ['codeExecute.network', { codeExecute: { network: 'bridge' } }, strictUser],
    ['codeExecute.network', { codeExecute: { network: 'bridge' } }, noUserFile],
    ['codeExecute.enabled', { codeExecute: { enabled: true } }, strictUser],
    ['codeExecute.keepAlive', { codeExecute: { keepAlive: true } }, strictUser],
    ['readOnlyRoot', { readOnlyRoot: false }, strictUser],
    ['images.pull', { images: { pull: true } }, strictUser],
    ['project.mount', { project: { mount: 'scratch' } }, strictUser],
    ['project.mount', { project: { mount: 'rw' } }, noUserFile],
  ])('%s widened (%j) is refused, naming the field and the safer choices', (field, content, env) => {
    const e = syncSandboxError(() => loadConfig({ cwd: projectWith(content), env: env() }));
    expect(e.code).toBe('INVALID_CONFIG');
    expect(e.data.field).toBe(field);
    expect(e.message).toContain(`${field} is `);
    expect(e.message).toMatch(/a project may only choose /);
    expect(e.message).toContain('your own config');
  });

  test("a choice equal to the user's is kept and not listed; each safer one is listed with what it replaced", () => {
    const same = loadConfig({ cwd: projectWith({ network: 'none', task: { network: 'none' }, readOnlyRoot: true }), env: strictUser() });
    expect(same.projectChanged).toBeUndefined();
    const c = loadConfig({
      cwd: projectWith({
        network: 'none',
        readOnlyRoot: true,
        task: { network: 'none' },
        codeExecute: { enabled: false, keepAlive: false, network: 'none' },
        images: { pull: false },
        project: { mount: 'none' },
      }),
      env: userFile({ network: 'bridge', codeExecute: { network: 'bridge' } }),
    });
    expect([c.network, c.readOnlyRoot, c.task.network, c.codeExecute.enabled, c.codeExecute.keepAlive]).toEqual([
      'none',
      true,
      'none',
      false,
      false,
    ]);
    expect(c.projectChanged?.settings).toEqual([
      'network none (was bridge)',
      'task.network none (was bridge)',
      'codeExecute.network none (was bridge)',
      'codeExecute.enabled false (was true)',
      'codeExecute.keepAlive false (was true)',
      'readOnlyRoot true (was false)',
      'images.pull false (was true)',
      'project.mount none (was ro)',
    ]);
  });
});

describe("logs.dir is the user's alone", () => {
  // The sweep applies the overlay records it finds under logs.dir onto the host folders they
  // name: a repository choosing that folder could plant records for any folder of the user's.
  test.each([
    ['inside the project', { logs: { dir: './.cache/gcd' } }],
    ['a folder of its own elsewhere', { logs: { dir: '/tmp/gcd-project-logs' } }],
    ['the default folder spelled out', { logs: { dir: join(tempDir('gcd-state-'), 'genaicode-docker', 'logs') } }],
    ['with other settings beside it', { limits: { memory: '256m' }, logs: { dir: 'var/logs', maxAgeDays: 1 } }],
  ])('%s: INVALID_CONFIG naming logs.dir and where it belongs', (_what, content) => {
    const root = projectWith(content);
    const e = syncSandboxError(() => loadConfig({ cwd: root, env: noUserFile() }));
    expect(e.code).toBe('INVALID_CONFIG');
    expect(e.data.field).toBe('logs.dir');
    expect(e.message).toContain(join(root, CONFIG_FILE_NAME));
    expect(e.message).toContain('overlay records');
    expect(e.message).toContain('your own config');
  });

  test("the user's file, the environment or the options still set it, even inside the project", () => {
    const root = projectWith({ logs: { maxAgeDays: 1 } });
    expect(loadConfig({ cwd: root, env: { ...userFile({ logs: { dir: 'var/logs' } }) } }).logs.dir).toBe(join(root, 'var', 'logs'));
    expect(loadConfig({ cwd: root, env: { ...noUserFile(), GENAICODE_DOCKER_LOG_DIR: 'env/logs' } }).logs.dir).toBe(
      join(root, 'env', 'logs'),
    );
    expect(loadConfig({ cwd: root, env: noUserFile(), overrides: { logs: { dir: 'opt/logs' } } }).logs.dir).toBe(join(root, 'opt', 'logs'));
  });
});

describe('the question the user answers names what the project changed', () => {
  function handlerOf(plugin: Plugin, action: string) {
    const entry = plugin.actionHandlers?.[action];
    if (!entry) throw new Error(`the plugin has no action ${action}`);
    return entry.handler;
  }

  test.each([
    ['startContainer', { image: 'alpine:3.20' }],
    ['codeExecute', { language: 'python', code: 'print(1)' }],
  ])('%s', async (action, args) => {
    const saved = process.env.XDG_CONFIG_HOME;
    process.env.XDG_CONFIG_HOME = tempDir('gcd-xdg-');
    try {
      const project = projectWith({ limits: { memory: '128m' }, codeExecute: { timeoutSeconds: 5 }, exec: { timeoutMs: 5000 } });
      const engine = new FakeEngine({ images: ['alpine:3.20', 'genaicode-docker/sandbox-python:latest'] });
      const host = new FakeHost({ answers: [false] });
      const plugin = createDockerPlugin({ engine, host, cwd: project, config: { logs: { dir: tempDir('gcd-logs-') } } });
      await handlerOf(plugin, action)(handlerProps(action, new ScriptedModel([[{ id: 'c1', name: action, args }]])));
      const prompt = (host.confirmations[0] as { prompt: string }).prompt;
      expect(prompt).toContain(join(project, CONFIG_FILE_NAME));
      for (const s of ['limits.memory 128 MiB (was 512 MiB)', 'codeExecute.timeoutSeconds 5 (was 30)', 'exec.timeoutMs 5000 (was 300000)'])
        expect(prompt).toContain(s);
    } finally {
      process.env.XDG_CONFIG_HOME = saved;
    }
  });
});
