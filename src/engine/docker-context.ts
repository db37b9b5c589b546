import { readFileSync } from 'node:fs';
import net from 'node:net';
import { join } from 'node:path';
import type Docker from 'dockerode';
import { SandboxError } from '../errors.js';
import type { EngineConnection } from './connection.js';
import type { EngineInfo } from './container-engine.js';
import { containerGoneError } from './container-gone.js';
import { asHttpError, containerGone } from './engine-errors.js';
import type { EngineTransport } from './exec-stream.js';
import type { EngineHost } from './rootless.js';

/**
 * What the parts of the dockerode adapter share (docker-containers.ts, docker-exec.ts,
 * docker-archive.ts, docker-images.ts): one dockerode client, the raw connection exec output
 * is read over, and the one translation of an engine failure into a SandboxError.
 */
export interface DockerContext {
  readonly docker: Docker;
  readonly connection: EngineConnection;
  readonly transport: EngineTransport;
  /** Translates an engine failure into a SandboxError; unreachable engines get the how-to sentence. */
  fail(e: unknown, context: string): SandboxError;
  /** Which engine answers (asked once): a few of its answers differ (Podman). */
  kind(): Promise<EngineInfo['kind']>;
  /** Whether the engine runs rootless, and on which cgroups, asked once (again after a failure). */
  host(): Promise<EngineHost>;
  /** Whether the operator lets sandboxes start on a rootless engine on cgroups v1, without their limits (rootless.ts). */
  readonly rootlessWithoutLimits: boolean;
  /** The engine service's /proc/PID/limits text, read once (podman-limits.ts). */
  serviceLimits(): string | undefined;
  /** Podman only: the named overlay volumes made for each container of ours (none: an empty list), by its id (podman-overlays.ts). */
  readonly podmanVolumes: Map<string, string[]>;
  /** Rootless Podman only: the file size cap each exec of a container of ours sets itself (rootless.ts, `underFileSizeCap`), by its id. */
  readonly execFileSizeCaps: Map<string, number>;
}

/** dockerode's options for a connection; reading the TLS files here says which one is missing. */
export function dockerOptions(conn: EngineConnection): Docker.DockerOptions {
  // docker-modem starts from what $DOCKER_HOST says and lays these options over it: with an
  // ssh:// or tcp:// DOCKER_HOST, its host and protocol would win over a socket path (ssh://
  // through ssh2, which checks no host key). So a socket connection says there is no host.
  if (conn.kind === 'socket')
    return { socketPath: conn.socketPath, host: undefined, port: undefined, protocol: 'http', username: undefined };
  if (conn.kind === 'ssh') throw new Error('An ssh:// engine is reached through the local end of its forward (ssh-tunnel.ts).');
  if (conn.protocol === 'http') return { host: conn.host, port: conn.port, protocol: 'http' };
  const read = (f: string) => {
    try {
      return readFileSync(join(conn.certPath ?? '', f));
    } catch (e) {
      throw new SandboxError(
        'INVALID_CONFIG',
        `TLS is on (DOCKER_TLS_VERIFY) but ${join(conn.certPath ?? '', f)} cannot be read: ${(e as Error).message}`,
      );
    }
  };
  return { host: conn.host, port: conn.port, protocol: 'https', ca: read('ca.pem'), cert: read('cert.pem'), key: read('key.pem') };
}

/** The raw connection exec output is read over: the same engine and TLS material as dockerode's. */
export function execTransport(conn: EngineConnection, options: Docker.DockerOptions): EngineTransport {
  if (conn.kind === 'socket') return { kind: 'net', options: { path: conn.socketPath }, hostHeader: 'localhost' };
  if (conn.kind === 'ssh') throw new Error('An ssh:// engine is reached through the local end of its forward (ssh-tunnel.ts).');
  const hostHeader = `${conn.host.includes(':') ? `[${conn.host}]` : conn.host}:${conn.port}`;
  if (conn.protocol === 'http') return { kind: 'net', options: { host: conn.host, port: conn.port }, hostHeader };
  return {
    kind: 'tls',
    options: {
      host: conn.host,
      port: conn.port,
      ca: options.ca,
      cert: options.cert,
      key: options.key,
      ...(net.isIP(conn.host) ? {} : { servername: conn.host }),
    },
    hostHeader,
  };
}

/** The container is gone: CONTAINER_NOT_FOUND, said the same way by every method. */
export function goneError(containerId: string, cause: unknown): SandboxError {
  return containerGoneError({ id: containerId }, 'it was stopped, removed or reached its expiry', { cause });
}

/** Whether the container is running: undefined when it is gone, null when the engine could not say. */
export async function runningState(ctx: DockerContext, id: string): Promise<boolean | undefined | null> {
  try {
    return (await ctx.docker.getContainer(id).inspect()).State.Running;
  } catch (e) {
    return containerGone(asHttpError(e)) ? undefined : null;
  }
}

/**
 * The error for a call the engine answered with an error: CONTAINER_NOT_FOUND when the
 * container stopped or went under it ("removal in progress", "container is not running",
 * "no such container"), which its own state says, not the message; `otherwise()` when not,
 * or when the engine could not be asked.
 */
export async function goneOr(ctx: DockerContext, id: string, e: unknown, otherwise: () => SandboxError): Promise<SandboxError> {
  const err = asHttpError(e);
  if (err.statusCode === undefined || err.code) return otherwise();
  const running = await runningState(ctx, id);
  // The one rule (container-gone.ts): no such container, or one that is not running.
  return running === undefined || running === false ? goneError(id, e) : otherwise();
}
