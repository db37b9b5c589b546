import { homedir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SandboxError } from '../errors.js';

export const DEFAULT_SOCKET_PATH = '/var/run/docker.sock';

/** How to reach the engine's API: a unix socket, or http(s) over TCP. */
export type EngineConnection =
  | { kind: 'socket'; socketPath: string; endpoint: string }
  | {
      kind: 'tcp';
      host: string;
      port: number;
      protocol: 'http' | 'https';
      /** Folder with ca.pem, cert.pem and key.pem (https only). */
      certPath?: string;
      endpoint: string;
    }
  | SshConnection;

/**
 * An engine behind an OpenSSH server (`ssh://[user@]host[:port][/remote/socket]`): reached
 * through a local socket our own `ssh -L` child forwards (ssh-tunnel.ts).
 */
export interface SshConnection {
  kind: 'ssh';
  host: string;
  user?: string;
  port?: number;
  /** The engine's socket on the server. */
  remoteSocket: string;
  /** An ssh_config file given to ssh with -F (instead of ~/.ssh/config). */
  configFile?: string;
  endpoint: string;
}

/** How an ssh:// engine is reached, beyond its address (engine.ssh). */
export interface SshSettings {
  /** ssh_config file for the ssh child (-F). @default ssh's own: ~/.ssh/config, /etc/ssh/ssh_config */
  configFile?: string;
  /** The engine's socket on the server, where the address has no path. @default /var/run/docker.sock */
  remoteSocket?: string;
}

export interface ConnectionSettings {
  host?: string;
  socketPath?: string;
  ssh?: SshSettings;
  /** Start sandboxes on a rootless engine on cgroups v1, without the limits it cannot enforce (rootless.ts). */
  rootlessWithoutLimits?: boolean;
}

/** What a user name, a host name and a remote socket path may hold: nothing ssh or a shell reads as syntax. */
const SSH_USER = /^[A-Za-z0-9_][A-Za-z0-9._-]{0,63}$/;
const SSH_HOST = /^[A-Za-z0-9_](?:[A-Za-z0-9._-]{0,252})$/;
const SSH_HOST_V6 = /^\[[0-9A-Fa-f:.]+\]$/;
const REMOTE_SOCKET = /^\/[A-Za-z0-9._@+/-]{1,200}$/;

/**
 * An ssh:// address, checked strictly: each part goes on ssh's command line (the host after
 * `--`) and the socket path into the remote command, so none may start with `-` or hold a
 * character ssh or a shell would read (an address from a hostile source must not become
 * `-oProxyCommand=...`).
 */
function sshConnection(address: string, ssh: SshSettings): SshConnection {
  const bad = (why: string) =>
    new SandboxError(
      'INVALID_CONFIG',
      `Engine address ${JSON.stringify(address)} is not a usable ssh:// address: ${why}. The form is ssh://[user@]host[:port][/path/of/the/engine.sock].`,
    );
  const m = /^ssh:\/\/(?:([^@/]*)@)?(\[[^\]]*\]|[^:/]*)(?::([^/]*))?(\/.*)?$/.exec(address);
  if (!m) throw bad('it does not parse');
  const [, user, host = '', portText, path] = m;
  if (user !== undefined && !SSH_USER.test(user))
    throw bad('the user name may hold letters, digits, ".", "_" and "-", and not start with "-"');
  if (!SSH_HOST.test(host) && !SSH_HOST_V6.test(host))
    throw bad('the host name may hold letters, digits, ".", "_" and "-", and not start with "-"');
  if (portText !== undefined && !(/^\d{1,5}$/.test(portText) && Number(portText) >= 1 && Number(portText) <= 65535))
    throw bad('the port is a number from 1 to 65535');
  const remoteSocket = path && path !== '/' ? path : (ssh.remoteSocket ?? DEFAULT_SOCKET_PATH);
  if (!REMOTE_SOCKET.test(remoteSocket) || remoteSocket.split('/').includes('..'))
    throw bad(`the engine's socket path ${JSON.stringify(remoteSocket)} may hold letters, digits and . _ @ + - /, and no ".."`);
  return {
    kind: 'ssh',
    host: host.replace(/^\[|\]$/g, ''),
    ...(user !== undefined ? { user } : {}),
    ...(portText !== undefined ? { port: Number(portText) } : {}),
    remoteSocket,
    ...(ssh.configFile ? { configFile: ssh.configFile } : {}),
    endpoint: address,
  };
}

/**
 * Resolves where the engine is. Order: the configured host, the configured socket path,
 * $DOCKER_HOST (with $DOCKER_TLS_VERIFY / $DOCKER_CERT_PATH), then the default socket.
 * @throws SandboxError INVALID_CONFIG for an address form we cannot speak.
 */
export function resolveConnection(settings: ConnectionSettings, env: NodeJS.ProcessEnv = process.env): EngineConnection {
  const host = settings.host ?? (settings.socketPath ? undefined : env.DOCKER_HOST);
  if (!host) {
    const socketPath = settings.socketPath ?? DEFAULT_SOCKET_PATH;
    return { kind: 'socket', socketPath, endpoint: `unix://${socketPath}` };
  }
  if (host.startsWith('unix://')) {
    const socketPath = host.slice('unix://'.length);
    if (!socketPath) throw new SandboxError('INVALID_CONFIG', `Engine address ${host} has no socket path.`);
    return { kind: 'socket', socketPath, endpoint: host };
  }
  if (host.startsWith('/')) return { kind: 'socket', socketPath: host, endpoint: `unix://${host}` };
  if (host.startsWith('npipe://')) {
    const socketPath = host.slice('npipe://'.length).replace(/\//g, '\\');
    return { kind: 'socket', socketPath, endpoint: host };
  }
  if (host.startsWith('ssh://')) return sshConnection(host, settings.ssh ?? {});
  const m = /^(tcp|http|https):\/\/(\[[^\]]+\]|[^:/]+)(?::(\d+))?\/?$/.exec(host);
  if (!m) {
    throw new SandboxError(
      'INVALID_CONFIG',
      `Engine address ${JSON.stringify(host)} is not supported: use unix:///path/to.sock, tcp://host:port, ssh://[user@]host[:port] or npipe://.`,
    );
  }
  const tls = m[1] === 'https' || (env.DOCKER_TLS_VERIFY !== undefined && env.DOCKER_TLS_VERIFY !== '' && env.DOCKER_TLS_VERIFY !== '0');
  const port = m[3] ? Number(m[3]) : tls ? 2376 : 2375;
  const hostname = m[2]!.replace(/^\[|\]$/g, '');
  return tls
    ? { kind: 'tcp', host: hostname, port, protocol: 'https', certPath: env.DOCKER_CERT_PATH || join(homedir(), '.docker'), endpoint: host }
    : { kind: 'tcp', host: hostname, port, protocol: 'http', endpoint: host };
}

/** This package's engine set-up script (scripts/ensure-engine.sh), wherever the package is installed. */
const ENSURE_ENGINE_SCRIPT = fileURLToPath(new URL('../../scripts/ensure-engine.sh', import.meta.url));

/** The sentence a person (or model) reads when no engine answers. */
export function engineUnavailableMessage(endpoint: string, reason: string): string {
  return (
    `No container engine answers at ${endpoint} (${reason}). ` +
    `Start one: \`sudo systemctl start docker\`, or as root on Debian \`bash ${ENSURE_ENGINE_SCRIPT}\`; ` +
    'or point DOCKER_HOST at a running engine (Podman: `podman system service --time=0 unix:///run/podman/podman.sock &` then DOCKER_HOST=unix:///run/podman/podman.sock).'
  );
}
