import { fileURLToPath } from 'node:url';
import type { EngineConnection } from './connection.js';
import { idsLeftBySyncChild } from './sync-child.js';

/** scripts/engine/remove-containers.cjs, wherever the package is installed. */
const REMOVER = fileURLToPath(new URL('../../scripts/engine/remove-containers.cjs', import.meta.url));

/**
 * Removes containers synchronously (force), for a process that is exiting: a child Node
 * process does the requests while this one waits (spawnSync). Best effort within
 * `timeoutMs`; returns the ids it could not remove. `volumes` (Podman's named overlay
 * volumes of these containers) are removed after them, best effort.
 */
export function removeContainersSync(conn: EngineConnection, ids: string[], timeoutMs: number, volumes: string[] = []): string[] {
  if (ids.length === 0) return [];
  if (conn.kind === 'ssh') throw new Error('An ssh:// engine is reached through the local end of its forward (ssh-tunnel.ts).');
  const request =
    conn.kind === 'socket'
      ? { socketPath: conn.socketPath }
      : { host: conn.host, port: conn.port, protocol: `${conn.protocol}:`, certPath: conn.certPath };
  return idsLeftBySyncChild([REMOVER], { ids, volumes, request }, ids, timeoutMs, 'the exit-time remover');
}
