/**
 * An engine reached over ssh, the way docs/engines.md says: `ssh -nNT -L <local socket>:<the
 * engine's socket>` to an sshd, then the local socket as DOCKER_HOST. Here the sshd is a real
 * OpenSSH server on loopback (Debian's openssh-server) with its own host key, a client key the
 * test makes and a known_hosts file that pins the host key (StrictHostKeyChecking=yes); the
 * socket it forwards is the main engine's. A start, commands, files, stop and the exit-time
 * remover all go through the tunnel. (ssh:// itself, the native way, is ssh-native.test.ts.)
 */
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import { DockerEngine } from '../../../src/engine/docker-engine.js';
import { poll } from '../../../src/retry.js';
import { SandboxManager } from '../../../src/index.js';
import { docker, engineSuite, MINIMAL_IMAGE, newTestSessionId } from '../../support/engine.js';
import { tempDir, testConfig } from '../../support/temp-dirs.js';

const children: ChildProcess[] = [];
let socketPath = '';

engineSuite('ssh-forward', {
  afterAll: () => {
    for (const c of children) c.kill('SIGKILL');
  },
});

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as AddressInfo;
      s.close(() => resolve(port));
    });
  });
}

function started(cmd: string, args: string[]): ChildProcess {
  const child = spawn(cmd, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  children.push(child);
  return child;
}

beforeAll(async () => {
  if (!existsSync('/usr/sbin/sshd')) throw new Error('sshd is missing: apt-get install openssh-server (Debian).');
  const dir = tempDir('gcd-sshd-');
  const port = await freePort();
  execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', join(dir, 'host_key')]);
  execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', join(dir, 'client_key')]);
  writeFileSync(join(dir, 'authorized_keys'), readFileSync(join(dir, 'client_key.pub')));
  writeFileSync(join(dir, 'known_hosts'), `[127.0.0.1]:${port} ${readFileSync(join(dir, 'host_key.pub'), 'utf8')}`);
  writeFileSync(
    join(dir, 'sshd_config'),
    [
      `Port ${port}`,
      'ListenAddress 127.0.0.1',
      `HostKey ${join(dir, 'host_key')}`,
      `AuthorizedKeysFile ${join(dir, 'authorized_keys')}`,
      `PidFile ${join(dir, 'sshd.pid')}`,
      'PermitRootLogin prohibit-password',
      'PasswordAuthentication no',
      'KbdInteractiveAuthentication no',
      'UsePAM no',
      'StrictModes no',
      'AllowStreamLocalForwarding yes',
      '',
    ].join('\n'),
  );
  mkdirSync('/run/sshd', { recursive: true }); // its privilege separation folder
  const sshd = started('/usr/sbin/sshd', ['-D', '-e', '-f', join(dir, 'sshd_config')]);
  let sshdLog = '';
  sshd.stderr?.on('data', (d: Buffer) => (sshdLog += d.toString()));
  expect(await poll(() => (/Server listening/.test(sshdLog) ? true : undefined), { timeoutMs: 20_000, intervalMs: 50 })).toBe(true);

  socketPath = join(dir, 'engine.sock');
  const user = execFileSync('id', ['-un'], { encoding: 'utf8' }).trim();
  const ssh = started('ssh', [
    '-nNT',
    '-o', 'BatchMode=yes',
    '-o', 'ExitOnForwardFailure=yes',
    '-o', 'StreamLocalBindUnlink=yes',
    '-o', 'StrictHostKeyChecking=yes',
    '-o', `UserKnownHostsFile=${join(dir, 'known_hosts')}`,
    '-i', join(dir, 'client_key'),
    '-p', String(port),
    '-L', `${socketPath}:/var/run/docker.sock`,
    `${user}@127.0.0.1`,
  ]); // prettier-ignore
  let sshLog = '';
  ssh.stderr?.on('data', (d: Buffer) => (sshLog += d.toString()));
  const up = await poll(() => (existsSync(socketPath) ? true : ssh.exitCode !== null ? false : undefined), {
    timeoutMs: 20_000,
    intervalMs: 50,
  });
  if (!up) throw new Error(`the ssh forward did not come up: ${sshLog}\n${sshdLog}`);
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
