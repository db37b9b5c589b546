import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { lstatSync, mkdirSync, rmSync } from 'node:fs';
import http, { Agent, type ClientRequestArgs } from 'node:http';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Duplex } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { swallowed } from '../debug.js';
import { SandboxError } from '../errors.js';
import { poll, type Clock } from '../retry.js';
import type { SshConnection } from './connection.js';
import { forwardRefusedError, remoteSocketError, sshExitError, sshTimeoutError } from './ssh-errors.js';

/**
 * An ssh:// engine, reached through the system's OpenSSH: one `ssh -L` child per engine
 * address forwards a local socket in a private folder of ours (0700) to the engine's socket on
 * the server. Everything that talks to the engine (dockerode through `agent`, the exec streams,
 * the exit-time remover, the sweep) connects to that local socket, so ssh's own host key
 * checks, config, keys and agent apply, and nothing else needs an ssh transport.
 *
 * The child starts at the first connection (`ready()`), and again at the next one if it ended
 * (a dropped network). It cannot outlive this process: its stdin is a pipe from us, read by
 * the remote command (`cat`), so our end, however it comes (exit, signal, SIGKILL), closes
 * the session and ssh exits; that happens after every exit handler ran (the remover included),
 * with no ordering to get right. It runs in a session of its own (detached), so a Ctrl-C at
 * the terminal, which reaches our whole process group, cannot cut the forward while the exit
 * hook still needs it. Its wrapper (scripts/engine/ssh-tunnel.sh) removes the folder after it.
 */

/** scripts/engine/ssh-tunnel.sh, wherever the package is installed. */
const WRAPPER = fileURLToPath(new URL('../../scripts/engine/ssh-tunnel.sh', import.meta.url));
/** How long ssh may take to connect, log in and forward a first `_ping`. */
const START_TIMEOUT_MS = 30_000;
/** How much of ssh's output is kept for the error sentences. */
const MAX_OUTPUT_CHARS = 16 * 1024;

/**
 * The remote command: say whether the engine's socket is there and usable (the client cannot
 * tell that from "open failed"), then hold the session open until our pipe closes. Written
 * for any login shell (sh, bash, zsh, fish, csh): `;`, `||`, `test`, `echo`, `cat`. The path
 * was checked to hold no quote (connection.ts).
 */
export function remoteCommand(remoteSocket: string): string {
  const p = `'${remoteSocket}'`;
  return `test -S ${p} || echo gcd-no-socket; test -w ${p} || echo gcd-no-access; echo gcd-checked; cat >/dev/null`;
}

/** ssh's arguments: no prompt, no multiplexing, nothing forwarded but the one socket. */
export function sshArguments(conn: SshConnection, localSocket: string): string[] {
  return [
    '-T', '-a', '-x',
    '-o', 'BatchMode=yes', // an unknown host key or a password prompt fails, never waits
    '-o', 'ExitOnForwardFailure=yes',
    '-o', 'StreamLocalBindUnlink=yes',
    '-o', 'StreamLocalBindMask=0177',
    '-o', 'ControlMaster=no', // a shared master (ControlPersist) would outlive us
    '-o', 'ControlPath=none',
    '-o', 'PermitLocalCommand=no',
    '-o', 'ConnectTimeout=20',
    '-o', 'ServerAliveInterval=15', // a dead network ends ssh; the next call starts it again
    '-o', 'ServerAliveCountMax=3',
    ...(conn.configFile ? ['-F', conn.configFile] : []),
    ...(conn.port ? ['-p', String(conn.port)] : []),
    ...(conn.user ? ['-l', conn.user] : []),
    '-L', `${localSocket}:${conn.remoteSocket}`,
    '--', conn.host,
    remoteCommand(conn.remoteSocket),
  ]; // prettier-ignore
}

/** One `GET /_ping` on the local socket: whether the engine answered through the forward. */
function ping(socketPath: string, timeoutMs: number): Promise<boolean> {
  return new Promise((resolve) => {
    const req = http.get({ socketPath, path: '/_ping', timeout: timeoutMs, agent: false }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode === 200));
      res.on('error', () => resolve(false));
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(false));
  });
}

/** The folder the local socket goes in: the user's runtime folder (private, cleared at logout), else the temp folder. */
function baseFolder(env: NodeJS.ProcessEnv): string {
  return env.XDG_RUNTIME_DIR || tmpdir();
}

export class SshTunnel {
  /** The local end, in a folder nobody else may enter. */
  readonly socketPath: string;
  /** dockerode's connections: each waits for the forward, then opens the local socket. */
  readonly agent: Agent;
  private readonly dir: string;
  private child: ChildProcess | undefined;
  private up: Promise<void> | undefined;

  constructor(
    readonly conn: SshConnection,
    private readonly options: { clock?: Clock; env?: NodeJS.ProcessEnv; startTimeoutMs?: number } = {},
  ) {
    this.dir = join(baseFolder(options.env ?? process.env), `genaicode-docker-ssh-${randomBytes(8).toString('hex')}`);
    this.socketPath = join(this.dir, 'engine.sock');
    this.agent = new TunnelAgent(this);
  }

  /** Resolves once the forward answers `_ping`; starts ssh when it is not running. */
  ready(): Promise<void> {
    if (this.up && this.child && this.child.exitCode === null && this.child.signalCode === null) return this.up;
    this.up = this.start().catch((e: unknown) => {
      this.up = undefined;
      throw e;
    });
    return this.up;
  }

  /** The pid of the running ssh wrapper (for tests and `doctor`), if any. */
  get pid(): number | undefined {
    return this.child && this.child.exitCode === null && this.child.signalCode === null ? this.child.pid : undefined;
  }

  private makeFolder(): void {
    try {
      mkdirSync(this.dir, { mode: 0o700 });
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
      // Ours from a forward that ended (its wrapper removes it): use it only as we made it.
      const st = lstatSync(this.dir);
      if (!st.isDirectory() || st.uid !== process.getuid?.() || (st.mode & 0o077) !== 0)
        throw new SandboxError('ENGINE_UNAVAILABLE', `The folder ${this.dir} for the ssh forward's socket exists and is not ours alone.`);
    }
  }

  private async start(): Promise<void> {
    this.makeFolder();
    const child = spawn('sh', [WRAPPER, ...sshArguments(this.conn, this.socketPath)], {
      detached: true,
      stdio: ['pipe', 'pipe', 'pipe'],
      env: { ...(this.options.env ?? process.env), GCD_SSH_DIR: this.dir, GCD_SSH_SOCKET: this.socketPath },
    });
    this.child = child;
    const out = { stdout: '', stderr: '' };
    let spawnError: Error | undefined;
    child.on('error', (e) => (spawnError = e));
    child.stdout?.setEncoding('utf8').on('data', (d: string) => (out.stdout = (out.stdout + d).slice(-MAX_OUTPUT_CHARS)));
    child.stderr?.setEncoding('utf8').on('data', (d: string) => (out.stderr = (out.stderr + d).slice(-MAX_OUTPUT_CHARS)));
    child.stdin?.on('error', (e) => swallowed('the ssh forward closed its input', e));
    // Nothing of the child keeps this process alive: it ends with us, not the other way round.
    child.unref();
    for (const s of [child.stdin, child.stdout, child.stderr]) (s as unknown as net.Socket | null)?.unref();
    const timeoutMs = this.options.startTimeoutMs ?? START_TIMEOUT_MS;
    try {
      const up = await poll(
        async () => {
          if (spawnError) throw new SandboxError('ENGINE_UNAVAILABLE', `Cannot run the ssh forward: ${spawnError.message}`);
          if (child.exitCode !== null || child.signalCode !== null) throw sshExitError(this.conn, out.stderr, child.exitCode);
          if (!out.stdout.includes('gcd-checked')) return undefined;
          if (out.stdout.includes('gcd-no-socket')) throw remoteSocketError(this.conn, 'no-socket');
          if (out.stdout.includes('gcd-no-access')) throw remoteSocketError(this.conn, 'no-access');
          if (await ping(this.socketPath, 10_000)) return true;
          // The socket is there and usable, so a refused channel is the server's sshd saying no.
          if (/open failed/.test(out.stderr)) throw forwardRefusedError(this.conn, out.stderr);
          return undefined;
        },
        { timeoutMs, intervalMs: 25, ...(this.options.clock ? { clock: this.options.clock } : {}) },
      );
      if (!up) throw sshTimeoutError(this.conn, Math.round(timeoutMs / 1000), out.stderr);
    } catch (e) {
      this.end();
      throw e;
    }
  }

  /** Ends the forward now (a failed start, a test): ssh and its wrapper, then the folder. */
  end(): void {
    const child = this.child;
    if (child?.pid !== undefined && child.exitCode === null && child.signalCode === null) {
      try {
        process.kill(-child.pid, 'SIGTERM'); // its process group: the wrapper and ssh
      } catch (e) {
        swallowed('ending the ssh forward', e);
      }
    }
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** An http.Agent whose connections wait for the forward, then go to its local socket. */
class TunnelAgent extends Agent {
  constructor(private readonly tunnel: SshTunnel) {
    // As dockerode's default (Node's global agent): idle connections kept, never keeping the process alive.
    super({ keepAlive: true });
  }

  override createConnection(options: ClientRequestArgs, done?: (err: Error | null, stream: Duplex) => void): undefined {
    this.tunnel.ready().then(
      () => done?.(null, net.createConnection({ path: this.tunnel.socketPath, ...(options.timeout ? { timeout: options.timeout } : {}) })),
      (e: Error) => done?.(e, undefined as unknown as Duplex), // Node reads only the error when there is one
    );
    return undefined;
  }
}

/** One forward per address (and ssh config) in this process, shared by every engine object that names it. */
const tunnels = new Map<string, SshTunnel>();

export function sshTunnel(conn: SshConnection): SshTunnel {
  const key = JSON.stringify([conn.endpoint, conn.remoteSocket, conn.configFile ?? null]);
  let tunnel = tunnels.get(key);
  if (!tunnel) tunnels.set(key, (tunnel = new SshTunnel(conn)));
  return tunnel;
}
