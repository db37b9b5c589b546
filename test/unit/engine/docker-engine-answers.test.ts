import { mkdtempSync, rmSync } from 'node:fs';
import { spawn, type ChildProcess } from 'node:child_process';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DockerEngine } from '../../../src/engine/docker-engine.js';
import type { ContainerSpec } from '../../../src/engine/container-engine.js';
import { sandboxError } from '../helpers.js';

/**
 * The adapter's reading of engine answers that only some engines give, against a stand-in
 * engine on a unix socket. Podman 4.3 answers 500 "no such container" (not 404) for a
 * container that its auto-removal is taking away at that moment, and refuses `Init: true`
 * when installed without an init binary.
 */
const PODMAN_GONE = { cause: 'no such container', message: 'container gone does not exist in database: no such container', response: 500 };
type Answer = [number, object | undefined];
/** One answer for every request, or answers in turn (the last one repeats). */
const answers: Record<string, Answer | { inTurn: Answer[] }> = {
  'POST /containers/gone/stop': [500, PODMAN_GONE],
  'GET /containers/gone/json': [500, PODMAN_GONE],
  'DELETE /containers/gone': [500, PODMAN_GONE],
  'POST /containers/gone/exec': [500, PODMAN_GONE],
  'POST /containers/broken/stop': [500, { message: 'runtime exploded', response: 500 }],
  'DELETE /containers/broken': [500, { message: 'runtime exploded', response: 500 }],
  'DELETE /containers/removing': [409, { message: 'removal of container removing is already in progress' }],
  'DELETE /containers/dying': {
    inTurn: [
      [409, { message: 'removal of container dying is already in progress' }],
      [204, undefined],
    ],
  },
  'GET /containers/dying/json': [200, { Id: 'dying', State: { Status: 'dead', Dead: true } }],
  'GET /containers/removing/json': {
    inTurn: [
      [200, { Id: 'removing' }],
      [200, { Id: 'removing' }],
      [200, { Id: 'removing' }],
      [404, { message: 'No such container: removing' }],
    ],
  },
  // Asked once before the first create: whether the engine is rootless (rootless.ts).
  'GET /info': [200, { CgroupVersion: '2' }],
  'POST /containers/create': [
    500,
    {
      cause: 'no such file or directory',
      message:
        'container create: container-init binary not found on the host: stat /usr/libexec/podman/catatonit: no such file or directory',
      response: 500,
    },
  ],
};

// The stand-in runs in a child process: the exit hook's remover blocks this one (spawnSync).
const SERVER = `
  const http = require('http');
  const [socketPath, answersJson] = process.argv.slice(1);
  const answers = JSON.parse(answersJson);
  const seen = {};
  http.createServer((req, res) => {
    req.resume();
    const key = req.method + ' ' + new URL(req.url || '/', 'http://x').pathname;
    if (key === 'GET /seen') return res.end(JSON.stringify(seen));
    const n = (seen[key] = (seen[key] || 0) + 1);
    const a = answers[key];
    const [status, body] = !a ? [599, { message: 'unexpected request ' + key }] : a.inTurn ? a.inTurn[Math.min(n, a.inTurn.length) - 1] : a;
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

/** How many requests of each kind the stand-in has answered. */
function seen(): Promise<Record<string, number>> {
  return new Promise((resolve, reject) => {
    const req = request({ socketPath, path: '/seen' }, (res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d.toString()));
      res.on('end', () => resolve(JSON.parse(body) as Record<string, number>));
    });
    req.on('error', reject);
    req.end();
  });
}

test('a removal already in progress (auto-remove): remove resolves once the container is gone, not before', async () => {
  expect(await engine().removeContainer('removing', true)).toBe(true);
  // Inspected until the engine answered 404: three answers of "still there", then gone.
  expect(await seen()).toMatchObject({ 'DELETE /containers/removing': 1, 'GET /containers/removing/json': 4 });
});

test('a removal in progress that fails half-way (the container left dead): it is removed again, not left', async () => {
  expect(await engine().removeContainer('dying', true)).toBe(true);
  expect(await seen()).toMatchObject({ 'DELETE /containers/dying': 2, 'GET /containers/dying/json': 1 });
});

describe('Podman\'s 500 "no such container" counts as gone', () => {
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
    image: 'img',
    entrypoint: ['sleep'],
    cmd: ['60'],
    env: [],
    labels: {},
    workdir: '/',
    memoryBytes: 1 << 29,
    nanoCpus: 1e9,
    pidsLimit: 64,
    network: 'none',
    readOnlyRoot: false,
    tmpfs: [],
    binds: [],
    capAdd: [],
    autoRemove: true,
  };
  const err = await sandboxError(() => engine().createContainer(spec));
  expect(err.code).toBe('ENGINE_ERROR');
  expect(err.message).toContain('container-init binary not found on the host');
  expect(err.message).toContain('install catatonit (`apt-get install catatonit`) or set `init_path`');
});
