/**
 * No engine at the configured address: every entry point fails with ENGINE_UNAVAILABLE and
 * a sentence saying how to start one, never with a raw socket error. (The real engine is
 * still required: the test proves that a working engine next to a wrong address is not used.)
 */
import { join } from 'node:path';
import { DockerEngine, SandboxError, SandboxManager, sweepContainers } from '../../../src/index.js';
import { newTestSessionId, engineSuite } from '../../support/engine.js';
import { tempDir, testConfig } from '../../support/temp-dirs.js';

engineSuite('engine-unavailable');

function missingSocket(): string {
  return join(tempDir(), 'no-such-dir', 'docker.sock');
}

async function caught(p: Promise<unknown>): Promise<SandboxError> {
  try {
    await p;
  } catch (e) {
    if (e instanceof SandboxError) return e;
    throw new Error(`expected a SandboxError, got ${String(e)}`);
  }
  throw new Error('expected a failure, got success');
}

function expectHowToStart(e: SandboxError, socketPath: string): void {
  expect(e.code).toBe('ENGINE_UNAVAILABLE');
  expect(e.message).toContain(`unix://${socketPath}`);
  expect(e.message).toMatch(/systemctl start docker/);
  expect(e.message).toMatch(/ensure-engine\.sh/);
  expect(e.message).toMatch(/DOCKER_HOST/);
}

test.concurrent('DockerEngine at a socket path that does not exist: info() and list fail with the how-to', async () => {
  const socketPath = missingSocket();
  const engine = new DockerEngine({ socketPath });
  expect(engine.connection).toMatchObject({ kind: 'socket', socketPath });
  expectHowToStart(await caught(engine.info()), socketPath);
  expectHowToStart(await caught(engine.listContainers({})), socketPath);
  expectHowToStart(await caught(engine.hasImage('genaicode-docker/sandbox-minimal:latest')), socketPath);
  expectHowToStart(await caught(sweepContainers(engine)), socketPath);
});

test.concurrent('SandboxManager.start through the configuration (with and without the start-up sweep)', async () => {
  const socketPath = missingSocket();
  for (const sweepOnStart of [true, false]) {
    const config = testConfig({ engine: { socketPath } });
    const manager = new SandboxManager({ config, sessionId: newTestSessionId(), sweepOnStart });
    try {
      expectHowToStart(await caught(manager.start()), socketPath);
      expect(manager.list()).toEqual([]);
    } finally {
      await manager[Symbol.asyncDispose]();
    }
  }
});

test.concurrent('DOCKER_HOST pointing at a missing socket is honoured, and fails the same way', async () => {
  const socketPath = missingSocket();
  const engine = new DockerEngine({}, { DOCKER_HOST: `unix://${socketPath}` });
  expectHowToStart(await caught(engine.info()), socketPath);
});

test.concurrent('a socket path that exists but is not a socket is not an engine either', async () => {
  const notASocket = tempDir();
  const engine = new DockerEngine({ socketPath: notASocket });
  const e = await caught(engine.info());
  expect(e.code).toBe('ENGINE_UNAVAILABLE');
  expect(e.message).toMatch(/systemctl start docker/);
});

test.concurrent('the real engine answers at the default address (so the failures above are about the address)', async () => {
  const info = await new DockerEngine().info();
  expect(info.kind).toBe('docker');
  expect(info.version).toMatch(/^\d+\.\d+/);
});
