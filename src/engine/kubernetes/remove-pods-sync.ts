import type { KubeConfig } from '@kubernetes/client-node';
import type WebSocket from 'ws';
import { idsLeftBySyncChild } from '../sync-child.js';
import { CLAIMS, CLAIM_GROUP, CLAIM_VERSION } from './claim-spec.js';

/**
 * Deletes pods (or SandboxClaims) synchronously, for a process that is exiting: a child Node process sends the
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
  /** What a sandbox is: a pod, or a SandboxClaim (whose deletion takes its pod with it). */
  collection: 'pods' | 'claims';
}

/** Where the objects of a collection are, below the server's path. */
const COLLECTION_PATH = { pods: '/api/v1', claims: `/apis/${CLAIM_GROUP}/${CLAIM_VERSION}` } as const;
const PLURAL = { pods: 'pods', claims: CLAIMS } as const;

/** What the remover needs, resolved while promises can still be waited on (credentials may be renewed). */
export async function syncTargetOf(
  kc: KubeConfig,
  server: string,
  namespace: string,
  collection: SyncTarget['collection'],
): Promise<SyncTarget> {
  const o: WebSocket.ClientOptions = {};
  await kc.applyToHTTPSOptions(o);
  const tls: Record<string, string | boolean> = {};
  for (const k of ['ca', 'cert', 'key', 'passphrase', 'servername'] as const) {
    const v = (o as Record<string, unknown>)[k];
    if (typeof v === 'string' || Buffer.isBuffer(v)) tls[k] = v.toString();
  }
  if (typeof o.rejectUnauthorized === 'boolean') tls.rejectUnauthorized = o.rejectUnauthorized;
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(o.headers ?? {})) if (typeof v === 'string') headers[k] = v;
  return { server, namespace, tls, headers, collection };
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
    const path = u.pathname.replace(/\\/$/, '') + r.prefix + '/namespaces/' + encodeURIComponent(r.namespace) + '/' + r.plural + '/' + encodeURIComponent(id) + '?gracePeriodSeconds=0';
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
  const { collection, ...rest } = target;
  const where = { prefix: COLLECTION_PATH[collection], plural: PLURAL[collection] };
  return idsLeftBySyncChild(['-e', CHILD], { ...rest, ...where, ids }, ids, timeoutMs, 'the exit-time pod remover');
}
