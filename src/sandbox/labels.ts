import { hostname } from 'node:os';
import { PACKAGE_VERSION } from '../version.js';

/** Label keys on every container this package creates. */
export const LABEL = {
  managed: 'genaicode-docker.managed',
  session: 'genaicode-docker.session',
  owner: 'genaicode-docker.owner',
  createdAt: 'genaicode-docker.created-at',
  expiresAt: 'genaicode-docker.expires-at',
  version: 'genaicode-docker.version',
} as const;

export const MANAGED_FILTER = { [LABEL.managed]: 'true' } as const;

export interface Owner {
  host: string;
  pid: number;
}

export function currentOwner(): Owner {
  return { host: hostname(), pid: process.pid };
}

export function containerLabels(sessionId: string, owner: Owner, createdAt: Date, expiresAt: Date): Record<string, string> {
  return {
    [LABEL.managed]: 'true',
    [LABEL.session]: sessionId,
    [LABEL.owner]: `${owner.host}:${owner.pid}`,
    [LABEL.createdAt]: createdAt.toISOString(),
    [LABEL.expiresAt]: expiresAt.toISOString(),
    [LABEL.version]: PACKAGE_VERSION,
  };
}

/** Reads `host:pid` back; undefined for a label we did not write. */
export function parseOwner(label: string | undefined): Owner | undefined {
  if (!label) return undefined;
  const i = label.lastIndexOf(':');
  const digits = label.slice(i + 1);
  const pid = Number(digits);
  if (i <= 0 || !/^\d{1,10}$/.test(digits) || pid <= 0) return undefined;
  return { host: label.slice(0, i), pid };
}
