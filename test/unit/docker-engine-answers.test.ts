import { mkdtempSync, rmSync } from 'node:fs';
import { spawn, type ChildProcess } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DockerEngine } from '../../src/engine/docker-engine.js';
import type { ContainerSpec } from '../../src/engine/container-engine.js';
import { sandboxError } from './helpers.js';

/**
 * The adapter's reading of engine answers that only some engines give, against a stand-in
 * engine on a unix socket. Podman 4.3 answers 500 "no such container" (not 404) for a
 * container that its auto-removal is taking away at that moment, and refuses `Init: true`
 * when installed without an init binary.
 */
const PODMAN_GONE = { cause: 'no such container', message: 'container gone does not exist in database: no such container', response: 500 };
const answers: Record<string, [number, object | undefined]> = {
  'POST /containers/gone/stop': [500, PODMAN_GONE],
  'GET /containers/gone/json': [500, PODMAN_GONE],
  'DELETE /containers/gone': [500, PODMAN_GONE],
  'POST /containers/gone/exec': [500, PODMAN_GONE],
  'POST /containers/broken/stop': [500, { message: 'runtime exploded', response: 500 }],
  'DELETE /containers/broken': [500, { message: 'runtime exploded', response: 500 }],
  'POST /containers/create': [500, { cause: 'no such file or directory', message: 'container create: container-init binary not found on the host: stat /usr/libexec/podman/catatonit: no such file or directory', response: 500 }],
};

// The stand-in runs in a child process: the exit hook's remover blocks this one (spawnSync).
const SERVER = `
  const http = require('http');
  const [socketPath, answersJson] = process.argv.slice(1);
  const answers = JSON.parse(answersJson);
  http.createServer((req, res) => {
    req.resume();
    const key = req.method + ' ' + new URL(req.url || '/', 'http://x').pathname;
    const [status, body] = answers[key] || [599, { message: 'unexpected request ' + key }];
    res.writeHead(status, { 'Content-Type': 'application/json' });
    res.end(JSON.stringify(body));
  }).listen(socketPath, () => console.log('ready'));
`;
const dir = mkdtempSync(join(tmpdir(), 'engine-answers-'));
const socketPath = join(dir, 'engine.sock');
let server: ChildProcess;
beforeAll(async () => {
  server = spawn(process.execPath, ['-e', SERVER, socketPath, JSON.stringify(answers)], { stdio: ['ignore', 'pipe', 'inherit'] });
  await new Promise<void>((resolve, reject) => {
    server.stdout!.once('data', () => resolve());
    server.once('exit', (code) => reject(new Error(`the stand-in engine exited (${code})`)));
  });
});
afterAll(() => {
  server.kill();
  rmSync(dir, { recursive: true, force: true });
});

const engine = () => new DockerEngine({ socketPath });

describe("Podman's 500 \"no such container\" counts as gone", () => {
  test('stop, remove and inspect of a container being auto-removed: gone, not an error', async () => {
    const e = engine();
    expect(await e.stopContainer('gone', 1)).toBe(false);
    expect(await e.removeContainer('gone', true)).toBe(false);
    expect(await e.inspectContainer('gone')).toBeUndefined();
  });

  test('a command in it: CONTAINER_NOT_FOUND', async () => {
    const err = await sandboxError(() => engine().exec('gone', { cmd: ['true'] }, () => undefined));
    expect(err.code).toBe('CONTAINER_NOT_FOUND');
  });

  test('the exit hook counts it as removed; another 500 is still an error, and left', async () => {
    expect(engine().removeContainersSync(['gone'], 10_000)).toEqual([]);
    expect(engine().removeContainersSync(['gone', 'broken'], 10_000)).toEqual(['broken']);
    const err = await sandboxError(() => engine().stopContainer('broken', 1));
    expect(err.code).toBe('ENGINE_ERROR');
    expect(err.message).toBe('Stop container broken: runtime exploded');
  });
});

test('an engine without an init binary: the error says how to install one', async () => {
  const spec: ContainerSpec = {
    image: 'img', entrypoint: ['sleep'], cmd: ['60'], env: [], labels: {}, workdir: '/', memoryBytes: 1 << 29, nanoCpus: 1e9, pidsLimit: 64,
    network: 'none', readOnlyRoot: false, tmpfs: [], binds: [], capAdd: [], autoRemove: true,
  };
  const err = await sandboxError(() => engine().createContainer(spec));
  expect(err.code).toBe('ENGINE_ERROR');
  expect(err.message).toContain('container-init binary not found on the host');
  expect(err.message).toContain('install catatonit (`apt-get install catatonit`) or set `init_path`');
});
