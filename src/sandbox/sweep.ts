import type { ContainerEngine, ContainerSummary } from '../engine/container-engine.js';
import { currentOwner, LABEL, MANAGED_FILTER, parseOwner, processStart, type Owner } from './labels.js';

export interface SweepOptions {
  /** Remove every managed container, whoever owns it (`cleanup --all`). @default false */
  all?: boolean;
  /** Only list what would be removed. @default false */
  dryRun?: boolean;
  now?: Date;
  /** Is a process of this host alive? @default process.kill(pid, 0) */
  isAlive?: (pid: number) => boolean;
  /** When a live process of this host started (see processStart), if the system tells. */
  startOf?: (pid: number) => string | undefined;
  self?: Owner;
  /** Container ids never to remove (this process's own). */
  keep?: ReadonlySet<string>;
}

/**
 * How long past its expiry label a container is left to end by itself before a sweep of
 * another process removes it. The label is written before the container starts, so its
 * own keep-alive ends a little after the label's time; a sweep in that gap would kill a
 * container that was about to exit cleanly (and race its auto-remove).
 */
export const EXPIRY_GRACE_MS = 30_000;

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

/** Is `owner` this very process (not an earlier one that had the same pid)? */
function isSelf(owner: Owner, self: Owner): boolean {
  return owner.host === self.host && owner.pid === self.pid && (owner.start === undefined || self.start === undefined || owner.start === self.start);
}

type ResolvedSweepOptions = Required<Pick<SweepOptions, 'now' | 'isAlive' | 'startOf' | 'self'>> & SweepOptions;

/** Why a managed container should go, or undefined to keep it. */
export function sweepReason(c: ContainerSummary, o: ResolvedSweepOptions): SweptContainer['why'] | undefined {
  if (o.keep?.has(c.id)) return undefined;
  if (o.all) return 'all';
  const expires = Date.parse(c.labels[LABEL.expiresAt] ?? '');
  if (Number.isFinite(expires) && expires + EXPIRY_GRACE_MS <= o.now.getTime()) return 'expired';
  const owner = parseOwner(c.labels[LABEL.owner], c.labels[LABEL.ownerStart]);
  if (!owner) return Number.isFinite(expires) ? undefined : 'unlabelled-owner';
  if (owner.host !== o.self.host) return undefined; // another machine's process: cannot tell, its expiry will
  if (isSelf(owner, o.self)) return undefined;
  if (!o.isAlive(owner.pid)) return 'owner-gone';
  // Alive, but is it the owner? A pid can be reused by an unrelated process.
  if (owner.start !== undefined) {
    const start = o.startOf(owner.pid);
    if (start !== undefined && start !== owner.start) return 'owner-gone';
  }
  return undefined;
}

/**
 * Removes managed containers whose owner process is gone from this host or whose expiry
 * passed more than EXPIRY_GRACE_MS ago. Containers of other live processes are never
 * touched before then.
 */
export async function sweepContainers(engine: ContainerEngine, options: SweepOptions = {}): Promise<SweepReport> {
  const o: ResolvedSweepOptions = { now: new Date(), isAlive: processAlive, startOf: processStart, self: currentOwner(), ...options };
  const report: SweepReport = { removed: [], kept: [], failed: [] };
  const list = await engine.listContainers(MANAGED_FILTER);
  await Promise.all(
    list.map(async (c) => {
      const name = c.names[0] ?? c.id.slice(0, 12);
      const owner = c.labels[LABEL.owner] ?? '?';
      const why = sweepReason(c, o);
      if (!why) {
        const parsed = parseOwner(c.labels[LABEL.owner], c.labels[LABEL.ownerStart]);
        const expires = Date.parse(c.labels[LABEL.expiresAt] ?? '');
        const keptWhy =
          o.keep?.has(c.id) || (parsed && isSelf(parsed, o.self))
            ? 'this process'
            : Number.isFinite(expires) && expires <= o.now.getTime()
              ? 'expired, ending by itself'
              : 'owner alive';
        report.kept.push({ id: c.id, name, owner, why: keptWhy });
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
