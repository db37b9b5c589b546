/**
 * An engine reached over ssh, the way docs/engines.md says: `ssh -nNT -L <local socket>:<the
 * engine's socket>` to an sshd, then the local socket as DOCKER_HOST. Here the sshd is a real
 * OpenSSH server on loopback (Debian's openssh-server) with its own host key, a client key the
 * test makes and a known_hosts file that pins the host key (StrictHostKeyChecking=yes); the
 * socket it forwards is the main engine's. A start, commands, files, stop and the exit-time
 * remover all go through the tunnel. (ssh:// itself, the native way, is ssh-native.test.ts.)
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { DockerEngine } from '../../../src/engine/docker-engine.js';
import { poll } from '../../../src/retry.js';
import { SandboxManager } from '../../../src/index.js';
import { docker, engineSuite, MINIMAL_IMAGE, newTestSessionId } from '../../support/engine.js';
import { startSshd } from '../../support/sshd.js';
import { testConfig } from '../../support/temp-dirs.js';

const children: ChildProcess[] = [];
let socketPath = '';

engineSuite('ssh-forward', {
  afterAll: () => {
    for (const c of children) c.kill('SIGKILL');
  },
});

beforeAll(async () => {
  const sshd = await startSshd();
  children.push(sshd.process);
  socketPath = join(sshd.dir, 'engine.sock');
  const user = execFileSync('id', ['-un'], { encoding: 'utf8' }).trim();
  // The client config pins the server's host key (StrictHostKeyChecking yes) and names the test key.
  const ssh = spawn('ssh', [
    '-nNT',
    '-F', sshd.clientConfig,
    '-o', 'BatchMode=yes',
    '-o', 'ExitOnForwardFailure=yes',
    '-o', 'StreamLocalBindUnlink=yes',
    '-p', String(sshd.port),
    '-L', `${socketPath}:/var/run/docker.sock`,
    `${user}@127.0.0.1`,
  ], { stdio: ['ignore', 'ignore', 'pipe'] }); // prettier-ignore
  children.push(ssh);
  let sshLog = '';
  ssh.stderr.on('data', (d: Buffer) => (sshLog += d.toString()));
  const up = await poll(() => (existsSync(socketPath) ? true : ssh.exitCode !== null ? false : undefined), {
    timeoutMs: 20_000,
    intervalMs: 50,
  });
  if (!up) throw new Error(`the ssh forward did not come up: ${sshLog}`);
});

test('through the forwarded socket: info, start, commands, files, stop, and the exit-time remover', async () => {
  const engine = new DockerEngine({ socketPath });
  expect(await engine.info()).toMatchObject({ kind: 'docker', endpoint: `unix://${socketPath}` });
  const manager = new SandboxManager({ config: testConfig(), engine, sessionId: newTestSessionId(), sweepOnStart: false });
  try {
    const sb = await manager.start({ image: MINIMAL_IMAGE });
    expect(await sb.exec('echo out; echo err >&2; exit 3')).toMatchObject({ exitCode: 3, stdout: 'out\n', stderr: 'err\n' });
    await sb.writeFile('notes/a.txt', 'over ssh\n');
    expect((await sb.readFile('notes/a.txt')).text).toBe('over ssh\n');
    // A command's input and a large output through the tunnel.
    expect((await sb.exec(['wc', '-c'], { stdin: Buffer.alloc(1 << 20, 'x') })).stdout.trim()).toBe(String(1 << 20));
    await sb.stop();
    expect((await docker(['container', 'inspect', sb.id])).code).not.toBe(0);

    const other = await manager.start({ image: MINIMAL_IMAGE });
    expect(engine.removeContainersSync([other.id], 20_000)).toEqual([]);
    expect((await docker(['container', 'inspect', other.id])).code).not.toBe(0);
  } finally {
    await manager[Symbol.asyncDispose]();
  }
}, 120_000);
