import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DockerEngine } from '../../../src/engine/docker-engine.js';
import { sandboxError } from '../helpers.js';

/**
 * What an engine (or whatever answers at its address) can send back, and what reaches the
 * caller: always a SandboxError, never a request to another host, never an exception
 * outside the promise (an uncaught one would end the GenAIcode process hosting us).
 */

type Route = (req: http.IncomingMessage, res: http.ServerResponse) => void;
let route: Route = (_req, res) => res.writeHead(599).end();

const dir = mkdtempSync(join(tmpdir(), 'hostile-engine-'));
const socketPath = join(dir, 'engine.sock');
const engineServer = http.createServer((req, res) => {
  req.resume();
  route(req, res);
});

/** A server a redirect would send us to: it counts every connection it gets. */
let bystanderConnections = 0;
const bystander = net.createServer((s) => {
  bystanderConnections++;
  s.destroy();
});
let bystanderPort = 0;

const uncaught: unknown[] = [];
const onUncaught = (e: unknown) => uncaught.push(e);

beforeAll(async () => {
  await new Promise<void>((r) => engineServer.listen(socketPath, r));
  await new Promise<void>((r) => bystander.listen(0, '127.0.0.1', r));
  bystanderPort = (bystander.address() as net.AddressInfo).port;
  process.on('uncaughtException', onUncaught);
});

afterAll(async () => {
  process.off('uncaughtException', onUncaught);
  await new Promise((r) => engineServer.close(r));
  await new Promise((r) => bystander.close(r));
  rmSync(dir, { recursive: true, force: true });
});

beforeEach(() => {
  bystanderConnections = 0;
  uncaught.length = 0;
});

function engine(): DockerEngine {
  return new DockerEngine({ socketPath });
}

/** Lets any late request or event run before the test looks. */
const settle = () => new Promise((r) => setTimeout(r, 150));

describe('redirects are never followed', () => {
  const locations = () => [
    `http://127.0.0.1:${bystanderPort}/images/x/json`,
    'http:/images/genaicode-docker/json', // what the engine sends for GET /images/genaicode-docker/./json
    '/images/other/json',
    `//127.0.0.1:${bystanderPort}/x`,
    'ftp://127.0.0.1/x',
    'not a url at all',
  ];

  test.each([301, 302, 307, 308])('status %i on an image inspect is an ENGINE_ERROR, and no other host is asked', async (status) => {
    for (const location of locations()) {
      route = (_req, res) => res.writeHead(status, { Location: location }).end();
      const e = await sandboxError(() => engine().hasImage('genaicode-docker/sandbox-minimal:latest'));
      expect(e.code).toBe('ENGINE_ERROR');
      expect(e.data.status).toBe(status);
    }
    await settle();
    expect(bystanderConnections).toBe(0);
    expect(uncaught).toEqual([]);
  });

  test('every kind of request: inspect, list, create, start, stop, remove, info, exec', async () => {
    route = (_req, res) => res.writeHead(301, { Location: `http://127.0.0.1:${bystanderPort}/` }).end();
    const e = engine();
    const calls: Array<() => Promise<unknown>> = [
      () => e.inspectContainer('abc'),
      () => e.listContainers({ a: 'b' }),
      () => e.startContainer('abc'),
      () => e.stopContainer('abc', 1),
      () => e.removeContainer('abc', true),
      () => e.info(),
      () => e.exec('abc', { cmd: ['true'] }, () => undefined),
      () => e.pullImage('python:3'),
    ];
    for (const call of calls) {
      const err = await sandboxError(call);
      expect(['ENGINE_ERROR', 'CONTAINER_START_FAILED', 'IMAGE_PULL_FAILED']).toContain(err.code);
    }
    await settle();
    expect(bystanderConnections).toBe(0);
    expect(uncaught).toEqual([]);
  });
});

describe('pulls: the engine\u2019s own words, and a stream that cannot throw', () => {
  test('a registry that cannot be reached: IMAGE_PULL_FAILED with the engine\u2019s message, not "server error"', async () => {
    const said = 'Get "https://registry-1.docker.io/v2/": dial tcp: lookup registry-1.docker.io on 10.0.0.1:53: no such host';
    route = (_req, res) => res.writeHead(500, { 'Content-Type': 'application/json' }).end(JSON.stringify({ message: said }));
    const e = await sandboxError(() => engine().pullImage('genaicode-docker/does-not-exist:1'));
    expect(e.code).toBe('IMAGE_PULL_FAILED');
    expect(e.message).toContain('no such host');
    expect(e.message).not.toMatch(/server error/);
    expect(e.data).toMatchObject({ image: 'genaicode-docker/does-not-exist:1', status: 500 });
  });

  test.each([
    ['manifest for x:1 not found: manifest unknown: manifest unknown', 'IMAGE_NOT_FOUND'],
    ['pull access denied for x, repository does not exist or may require \u0027docker login\u0027', 'IMAGE_NOT_FOUND'],
    ['unauthorized: authentication required', 'IMAGE_PULL_FAILED'],
    ['Get "https://127.0.0.1:5000/v2/": http: server gave HTTP response to HTTPS client', 'IMAGE_PULL_FAILED'],
  ])('%s -> %s, the message kept', async (said, code) => {
    route = (_req, res) => res.writeHead(500, { 'Content-Type': 'application/json' }).end(JSON.stringify({ message: said }));
    const e = await sandboxError(() => engine().pullImage('x:1'));
    expect(e.code).toBe(code);
    expect(e.message).toContain(said);
  });

  test('an error inside the progress stream (after 200) is reported as the engine wrote it', async () => {
    route = (_req, res) => {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.write('{"status":"Pulling from library/x","id":"1"}\n');
      res.end('{"errorDetail":{"message":"toomanyrequests: rate limit"},"error":"toomanyrequests: rate limit"}\n');
    };
    const e = await sandboxError(() => engine().pullImage('x:1'));
    expect(e.code).toBe('IMAGE_PULL_FAILED');
    expect(e.message).toContain('toomanyrequests: rate limit');
  });

  test('lines that are not JSON, or not objects, are skipped; progress still arrives', async () => {
    route = (_req, res) => {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.write('{not json\n[1,2]\nnull\n"str"\n');
      res.write('{"status":"Downloading","id":"abc","progressDetail":{"current":5,"total":10}}\n');
      res.end('{"status":"Download complete","id":"abc"}');
    };
    const progress: unknown[] = [];
    await engine().pullImage('x:1', (p) => progress.push(p));
    expect(progress).toEqual([
      { id: 'abc', status: 'Downloading', current: 5, total: 10 },
      { id: 'abc', status: 'Download complete', current: undefined, total: undefined },
    ]);
    await settle();
    expect(uncaught).toEqual([]);
  });

  test('a progress callback that throws, or a connection cut mid-stream, rejects the pull and nothing else', async () => {
    route = (_req, res) => {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.write('{"status":"Downloading","id":"abc"}\n');
      setTimeout(() => res.socket?.destroy(), 20);
    };
    const cut = await sandboxError(() => engine().pullImage('x:1'));
    expect(['IMAGE_PULL_FAILED', 'ENGINE_UNAVAILABLE', 'ENGINE_ERROR']).toContain(cut.code);
    route = (_req, res) => {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end('{"status":"Downloading","id":"abc"}\n');
    };
    await expect(
      engine().pullImage('x:1', () => {
        throw new Error('callback bug');
      }),
    ).rejects.toThrow();
    await settle();
    expect(uncaught).toEqual([]);
  });
});
