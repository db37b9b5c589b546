/**
 * A Docker registry on loopback for tests that pull (nothing leaves the machine): the
 * Debian package docker-registry, started on a free port, stopped with `stop()`.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { docker, dockerOk, MINIMAL_IMAGE, sleep } from './engine.js';
import { tempDir } from './temp-dirs.js';

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const address = srv.address();
      const p = typeof address === 'object' && address ? address.port : 0;
      srv.close(() => resolve(p));
    });
  });
}

export interface LoopbackRegistry {
  port: number;
  /** Pushes the minimal image as `repo:tag` and drops the local tag: a pull must fetch it. */
  pushMinimal(repoTag: string): Promise<string>;
  /**
   * Pushes an image of one layer no other image has (`bytes` of random data), so a pull
   * downloads it and reports the layer's progress; drops it locally.
   */
  pushFreshLayer(repoTag: string, bytes: number): Promise<string>;
  /** Stops the registry and removes the local tags pulled from it. */
  stop(): Promise<void>;
}

export async function startLoopbackRegistry(): Promise<LoopbackRegistry> {
  const dir = tempDir('gcd-registry-');
  const port = await freePort();
  const config = join(dir, 'config.yml');
  writeFileSync(
    config,
    [
      'version: 0.1',
      'log:',
      '  level: warn',
      'storage:',
      '  filesystem:',
      `    rootdirectory: ${join(dir, 'data')}`,
      '  delete:',
      '    enabled: true',
      'http:',
      `  addr: 127.0.0.1:${port}`,
      '',
    ].join('\n'),
  );
  let log = '';
  const registry: ChildProcess = spawn('docker-registry', ['serve', config], { stdio: ['ignore', 'pipe', 'pipe'] });
  registry.stdout?.on('data', (d: Buffer) => (log += d.toString()));
  registry.stderr?.on('data', (d: Buffer) => (log += d.toString()));
  const spawnError = new Promise<never>((_, reject) =>
    registry.once('error', (e) =>
      reject(new Error(`docker-registry could not start (install the Debian package docker-registry): ${e.message}`)),
    ),
  );
  const ready = (async () => {
    for (let i = 0; i < 100; i++) {
      try {
        const res = await fetch(`http://127.0.0.1:${port}/v2/`, { headers: { connection: 'close' } });
        if (res.status === 200) return;
      } catch {
        // not listening yet
      }
      if (registry.exitCode !== null) throw new Error(`docker-registry exited: ${log}`);
      await sleep(100);
    }
    throw new Error(`docker-registry did not answer on 127.0.0.1:${port}: ${log}`);
  })();
  await Promise.race([ready, spawnError]);
  const tags: string[] = [];
  // Pushes one at a time: the registry's filesystem storage can answer 500 when two pushes
  // upload the same layer at once.
  let pushQueue: Promise<unknown> = Promise.resolve();
  const push = (ref: string) => {
    const p = pushQueue.then(() => dockerOk(['push', ref], { timeoutMs: 60_000 }));
    pushQueue = p.catch(() => undefined);
    return p;
  };
  return {
    port,
    async pushMinimal(repoTag) {
      const ref = `127.0.0.1:${port}/${repoTag}`;
      await dockerOk(['tag', MINIMAL_IMAGE, ref]);
      await push(ref);
      await dockerOk(['rmi', ref]);
      tags.push(ref);
      return ref;
    },
    async pushFreshLayer(repoTag, bytes) {
      const ref = `127.0.0.1:${port}/${repoTag}`;
      const root = tempDir('gcd-layer-');
      writeFileSync(join(root, 'data.bin'), randomBytes(bytes));
      const r = spawnSync('sh', ['-c', 'tar -C "$1" -c . | docker import - "$2"', 'import', root, ref], {
        encoding: 'utf8',
        timeout: 60_000,
      });
      if (r.status !== 0) throw new Error(`docker import failed: ${r.stderr}`);
      await push(ref);
      await dockerOk(['rmi', ref]);
      tags.push(ref);
      return ref;
    },
    async stop() {
      if (tags.length) await docker(['rmi', ...tags]);
      if (registry.exitCode === null) {
        const exited = new Promise((r) => registry.once('exit', r));
        registry.kill('SIGTERM');
        await Promise.race([exited, new Promise((r) => setTimeout(r, 5000).unref())]);
        if (registry.exitCode === null && registry.signalCode === null) registry.kill('SIGKILL');
      }
    },
  };
}
