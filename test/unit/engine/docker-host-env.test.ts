import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DockerEngine } from '../../../src/engine/docker-engine.js';

/**
 * dockerode's modem reads $DOCKER_HOST itself and lays our options over what it found: with
 * an ssh:// DOCKER_HOST, its host and protocol would win over the socket we give it, and the
 * requests would go through ssh2, which checks no host key. Here a stand-in engine listens on
 * a unix socket, the configured socket path names it, and $DOCKER_HOST names something else:
 * every request must reach the stand-in.
 */
let dir: string;
let server: Server;
let socketPath: string;
const seen: string[] = [];
const saved = { host: process.env.DOCKER_HOST, tls: process.env.DOCKER_TLS_VERIFY };

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'gcd-docker-host-env-'));
  socketPath = join(dir, 'engine.sock');
  server = createServer((req, res) => {
    seen.push(`${req.method} ${req.url}`);
    res.setHeader('Content-Type', 'application/json');
    res.end(
      req.url?.endsWith('/version')
        ? JSON.stringify({ Version: '99.0', ApiVersion: '1.41', Os: 'linux', Arch: 'amd64', Components: [{ Name: 'Engine' }] })
        : JSON.stringify({ CgroupVersion: '2', SecurityOptions: [] }),
    );
  });
  await new Promise<void>((r) => server.listen(socketPath, r));
});

afterAll(async () => {
  await new Promise((r) => server.close(r));
  rmSync(dir, { recursive: true, force: true });
  process.env.DOCKER_HOST = saved.host;
  process.env.DOCKER_TLS_VERIFY = saved.tls;
  if (saved.host === undefined) delete process.env.DOCKER_HOST;
  if (saved.tls === undefined) delete process.env.DOCKER_TLS_VERIFY;
});

test.each([
  ['an ssh:// DOCKER_HOST', 'ssh://root@127.0.0.1:1', undefined],
  ['an ssh:// DOCKER_HOST with no user', 'ssh://127.0.0.1:1', undefined],
  ['a tcp:// DOCKER_HOST', 'tcp://127.0.0.1:1', undefined],
  ['a tcp:// DOCKER_HOST with TLS on', 'tcp://127.0.0.1:1', '1'],
])('the configured socket wins over %s', async (_what, host, tls) => {
  process.env.DOCKER_HOST = host;
  if (tls) process.env.DOCKER_TLS_VERIFY = tls;
  else delete process.env.DOCKER_TLS_VERIFY;
  seen.length = 0;
  const engine = new DockerEngine({ socketPath }, {});
  const info = await engine.info();
  expect(info).toMatchObject({ version: '99.0', endpoint: `unix://${socketPath}` });
  expect(seen.some((s) => s.endsWith('/version'))).toBe(true);
});
