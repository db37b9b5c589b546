/**
 * A real OpenSSH server on loopback (Debian's openssh-server) for the ssh:// tests: its own
 * host key, a client key the test makes, and client ssh_config files that pin (or do not pin)
 * its host key. OpenSSH reads ~ from the password database, not $HOME, so the client side is
 * a config file given with -F (engine.ssh.configFile), never the user's own ~/.ssh.
 */
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import { poll } from '../../src/retry.js';
import { tempDir } from './temp-dirs.js';

export interface Sshd {
  port: number;
  dir: string;
  /** A client config: the test key, a known_hosts that pins this server's key, strict checking. */
  clientConfig: string;
  /** A client config whose known_hosts is empty. */
  unknownKeyConfig: string;
  /** A client config whose known_hosts has another key for this server. */
  changedKeyConfig: string;
  process: ChildProcess;
}

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as AddressInfo;
      s.close(() => resolve(port));
    });
  });
}

function clientConfig(dir: string, name: string, knownHosts: string): string {
  writeFileSync(join(dir, `known_hosts_${name}`), knownHosts);
  const file = join(dir, `ssh_config_${name}`);
  writeFileSync(
    file,
    [
      'Host *',
      `  IdentityFile ${join(dir, 'client_key')}`,
      `  UserKnownHostsFile ${join(dir, `known_hosts_${name}`)}`,
      '  StrictHostKeyChecking yes',
      '',
    ].join('\n'),
  );
  return file;
}

/** Starts sshd; `forwarding: false` is a server whose sshd_config forbids stream forwarding. */
export async function startSshd(options: { forwarding?: boolean } = {}): Promise<Sshd> {
  if (!existsSync('/usr/sbin/sshd'))
    throw new Error('sshd is missing: apt-get install openssh-server (Debian), or bash scripts/setup.sh --test.');
  const dir = tempDir('gcd-sshd-');
  const port = await freePort();
  for (const k of ['host_key', 'client_key', 'other_host_key'])
    execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', join(dir, k)]);
  writeFileSync(join(dir, 'authorized_keys'), readFileSync(join(dir, 'client_key.pub')));
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
      `AllowStreamLocalForwarding ${options.forwarding === false ? 'no' : 'yes'}`,
      '',
    ].join('\n'),
  );
  mkdirSync('/run/sshd', { recursive: true }); // its privilege separation folder
  const sshd = spawn('/usr/sbin/sshd', ['-D', '-e', '-f', join(dir, 'sshd_config')], { stdio: ['ignore', 'ignore', 'pipe'] });
  // Its sessions inherit this pipe: one still open must not keep the test process alive.
  (sshd.stderr as unknown as { unref(): void }).unref();
  let log = '';
  sshd.stderr.on('data', (d: Buffer) => (log += d.toString()));
  const up = await poll(() => (/Server listening/.test(log) ? true : sshd.exitCode !== null ? false : undefined), {
    timeoutMs: 20_000,
    intervalMs: 50,
  });
  if (!up) throw new Error(`sshd did not start: ${log}`);
  const entry = (key: string) => `[127.0.0.1]:${port} ${readFileSync(join(dir, key), 'utf8')}`;
  return {
    port,
    dir,
    clientConfig: clientConfig(dir, 'pinned', entry('host_key.pub')),
    unknownKeyConfig: clientConfig(dir, 'empty', ''),
    changedKeyConfig: clientConfig(dir, 'changed', entry('other_host_key.pub')),
    process: sshd,
  };
}

/** The pids of the processes with an argument that holds `needle` (the ssh child and its wrapper name their local socket in -L). */
export function processesNaming(needle: string): number[] {
  const pids: number[] = [];
  for (const p of readdirSync('/proc').filter((n) => /^\d+$/.test(n))) {
    try {
      if (
        Number(p) !== process.pid &&
        readFileSync(`/proc/${p}/cmdline`, 'utf8')
          .split('\0')
          .some((arg) => arg.includes(needle))
      )
        pids.push(Number(p));
    } catch {
      // it ended while we looked
    }
  }
  return pids;
}
