import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { PACKAGE_VERSION } from '../version.js';
import { swallowed } from '../debug.js';

/** Label keys on every container this package creates. */
export const LABEL = {
  managed: 'genaicode-docker.managed',
  session: 'genaicode-docker.session',
  owner: 'genaicode-docker.owner',
  /** When the owner process started (Linux): tells a reused pid from the owner. */
  ownerStart: 'genaicode-docker.owner-start',
  createdAt: 'genaicode-docker.created-at',
  expiresAt: 'genaicode-docker.expires-at',
  version: 'genaicode-docker.version',
} as const;

export const MANAGED_FILTER = { [LABEL.managed]: 'true' } as const;

export interface Owner {
  host: string;
  pid: number;
  /** `<boot id>:<start time in clock ticks>` of the process, where the system tells it (Linux). */
  start?: string;
}

/**
 * When process `pid` started, as `<boot id>:<start time in clock ticks since boot>` from
 * /proc: the same pid with another start (or after a reboot) is another process. Undefined
 * where /proc does not tell (not Linux, no such process).
 */
export function processStart(pid: number): string | undefined {
  try {
    const bootId = readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name, which is in parentheses and may hold spaces: the
    // 22nd field of the line (starttime) is the 20th after it.
    const ticks = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
    return bootId && ticks && /^\d+$/.test(ticks) ? `${bootId}:${ticks}` : undefined;
  } catch (e) {
    swallowed('reading a process start time', e);
    return undefined;
  }
}

let self: Owner | undefined;

export function currentOwner(): Owner {
  if (self?.pid !== process.pid) {
    const start = processStart(process.pid);
    self = { host: hostname(), pid: process.pid, ...(start ? { start } : {}) };
  }
  return self;
}

export function containerLabels(sessionId: string, owner: Owner, createdAt: Date, expiresAt: Date): Record<string, string> {
  return {
    [LABEL.managed]: 'true',
    [LABEL.session]: sessionId,
    [LABEL.owner]: `${owner.host}:${owner.pid}`,
    ...(owner.start ? { [LABEL.ownerStart]: owner.start } : {}),
    [LABEL.createdAt]: createdAt.toISOString(),
    [LABEL.expiresAt]: expiresAt.toISOString(),
    [LABEL.version]: PACKAGE_VERSION,
  };
}

/** Reads `host:pid` (and the start label, if any) back; undefined for a label we did not write. */
export function parseOwner(label: string | undefined, startLabel?: string): Owner | undefined {
  if (!label) return undefined;
  const i = label.lastIndexOf(':');
  const digits = label.slice(i + 1);
  const pid = Number(digits);
  if (i <= 0 || !/^\d{1,10}$/.test(digits) || pid <= 0) return undefined;
  return { host: label.slice(0, i), pid, ...(startLabel ? { start: startLabel } : {}) };
}
