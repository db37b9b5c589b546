import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { swallowed } from '../debug.js';
import type { EngineConnection } from './connection.js';

/** scripts/engine/remove-containers.cjs, wherever the package is installed. */
const REMOVER = fileURLToPath(new URL('../../scripts/engine/remove-containers.cjs', import.meta.url));

/**
 * Removes containers synchronously (force), for a process that is exiting: a child Node
 * process does the requests while this one waits (spawnSync). Best effort within
 * `timeoutMs`; returns the ids it could not remove.
 */
export function removeContainersSync(conn: EngineConnection, ids: string[], timeoutMs: number): string[] {
  if (ids.length === 0) return [];
  const request =
    conn.kind === 'socket'
      ? { socketPath: conn.socketPath }
      : { host: conn.host, port: conn.port, protocol: `${conn.protocol}:`, certPath: conn.certPath };
  const r = spawnSync(process.execPath, [REMOVER], {
    input: JSON.stringify({ ids, request }),
    timeout: timeoutMs,
    encoding: 'utf8',
    stdio: ['pipe', 'pipe', 'ignore'],
  });
  try {
    return JSON.parse(r.stdout) as string[];
  } catch (e) {
    swallowed(`the exit-time remover answered ${JSON.stringify(r.stdout.slice(0, 200))}`, e);
    return ids;
  }
}
