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
    };

export interface ConnectionSettings {
  host?: string;
  socketPath?: string;
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
  const m = /^(tcp|http|https):\/\/(\[[^\]]+\]|[^:/]+)(?::(\d+))?\/?$/.exec(host);
  if (!m) {
    throw new SandboxError(
      'INVALID_CONFIG',
      `Engine address ${JSON.stringify(host)} is not supported: use unix:///path/to.sock, tcp://host:port or npipe://. ` +
        '(For ssh://, forward the socket first: ssh -L /tmp/docker.sock:/var/run/docker.sock HOST, then DOCKER_HOST=unix:///tmp/docker.sock.)',
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
