import { idsLeftBySyncChild } from '../sync-child.js';

/**
 * Deletes pods synchronously, for a process that is exiting: a child Node process sends the
 * DELETEs while this one waits (spawnSync). Best effort; the pods' own deadline
 * (activeDeadlineSeconds) ends whatever this misses. The child gets what it needs on stdin
 * (the server, TLS material and headers the kube config gave, resolved while we could still
 * wait on promises), so it loads nothing of ours.
 */

export interface SyncTarget {
  server: string;
  namespace: string;
  /** ca, cert, key, rejectUnauthorized, servername: as https.request takes them. */
  tls: Record<string, string | boolean>;
  headers: Record<string, string>;
}

// Plain CommonJS with node's own modules only: it runs as `node -e`, from anywhere.
const CHILD = `
const chunks = [];
process.stdin.on('data', (c) => chunks.push(c)).on('end', () => {
  const r = JSON.parse(Buffer.concat(chunks).toString('utf8'));
  const u = new URL(r.server);
  const mod = require(u.protocol === 'https:' ? 'node:https' : 'node:http');
  const failed = [];
  let left = r.ids.length;
  const settle = (id, ok) => { if (!ok) failed.push(id); if (--left === 0) process.stdout.write(JSON.stringify(failed)); };
  for (const id of r.ids) {
    const path = u.pathname.replace(/\\/$/, '') + '/api/v1/namespaces/' + encodeURIComponent(r.namespace) + '/pods/' + encodeURIComponent(id) + '?gracePeriodSeconds=0';
    const req = mod.request({ ...r.tls, headers: r.headers, method: 'DELETE', hostname: u.hostname.replace(/^\\[|\\]$/g, ''), port: u.port, path }, (res) => {
      res.resume();
      settle(id, res.statusCode < 300 || res.statusCode === 404);
    });
    req.on('error', () => settle(id, false));
    req.end();
  }
});`;

/** @returns the ids it could not delete. */
export function removePodsSync(target: SyncTarget | undefined, ids: string[], timeoutMs: number): string[] {
  if (ids.length === 0) return [];
  if (!target) return ids;
  return idsLeftBySyncChild(['-e', CHILD], { ...target, ids }, ids, timeoutMs, 'the exit-time pod remover');
}
