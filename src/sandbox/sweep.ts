import type { ContainerEngine, ContainerSummary } from '../engine/container-engine.js';
import { currentOwner, LABEL, MANAGED_FILTER, parseOwner, type Owner } from './labels.js';

export interface SweepOptions {
  /** Remove every managed container, whoever owns it (`cleanup --all`). @default false */
  all?: boolean;
  /** Only list what would be removed. @default false */
  dryRun?: boolean;
  now?: Date;
  /** Is a process of this host alive? @default process.kill(pid, 0) */
  isAlive?: (pid: number) => boolean;
  self?: Owner;
  /** Container ids never to remove (this process's own). */
  keep?: ReadonlySet<string>;
}

export interface SweptContainer {
  id: string;
  name: string;
  owner: string;
  expiresAt?: string;
  why: 'owner-gone' | 'expired' | 'all' | 'unlabelled-owner';
}

export interface SweepReport {
  removed: SweptContainer[];
  kept: Array<{ id: string; name: string; owner: string; why: string }>;
  failed: Array<{ id: string; error: string }>;
}

export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    // EPERM: it exists, but belongs to someone else.
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Why a managed container should go, or undefined to keep it. */
export function sweepReason(c: ContainerSummary, o: Required<Pick<SweepOptions, 'now' | 'isAlive' | 'self'>> & SweepOptions): SweptContainer['why'] | undefined {
  if (o.keep?.has(c.id)) return undefined;
  if (o.all) return 'all';
  const expires = Date.parse(c.labels[LABEL.expiresAt] ?? '');
  if (Number.isFinite(expires) && expires <= o.now.getTime()) return 'expired';
  const owner = parseOwner(c.labels[LABEL.owner]);
  if (!owner) return Number.isFinite(expires) ? undefined : 'unlabelled-owner';
  if (owner.host !== o.self.host) return undefined; // another machine's process: cannot tell, its expiry will
  if (owner.pid === o.self.pid) return undefined;
  return o.isAlive(owner.pid) ? undefined : 'owner-gone';
}

/**
 * Removes managed containers whose owner process is gone from this host or whose expiry
 * has passed. Containers of other live processes are never touched.
 */
export async function sweepContainers(engine: ContainerEngine, options: SweepOptions = {}): Promise<SweepReport> {
  const o = { now: new Date(), isAlive: processAlive, self: currentOwner(), ...options };
  const report: SweepReport = { removed: [], kept: [], failed: [] };
  const list = await engine.listContainers(MANAGED_FILTER);
  await Promise.all(
    list.map(async (c) => {
      const name = c.names[0] ?? c.id.slice(0, 12);
      const owner = c.labels[LABEL.owner] ?? '?';
      const why = sweepReason(c, o);
      if (!why) {
        report.kept.push({ id: c.id, name, owner, why: o.keep?.has(c.id) || parseOwner(owner)?.pid === o.self.pid ? 'this process' : 'owner alive' });
        return;
      }
      const entry: SweptContainer = { id: c.id, name, owner, why, ...(c.labels[LABEL.expiresAt] ? { expiresAt: c.labels[LABEL.expiresAt] } : {}) };
      if (o.dryRun) {
        report.removed.push(entry);
        return;
      }
      try {
        await engine.removeContainer(c.id, true);
        report.removed.push(entry);
      } catch (e) {
        report.failed.push({ id: c.id, error: e instanceof Error ? e.message : String(e) });
      }
    }),
  );
  return report;
}
