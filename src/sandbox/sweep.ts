import type { ContainerEngine, ContainerSummary } from '../engine/container-engine.js';
import { within, type Clock } from '../retry.js';
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
  /** The clock of the bound on each removal. */
  clock?: Clock;
}

/**
 * The longest one removal may take: a container whose engine lock is held (a frozen exec set
 * up in it) never answers, and a sweep must not hang the start that waits for it.
 */
export const REMOVE_BOUND_MS = 20_000;

/**
 * How long past its expiry label a container is left to end by itself before a sweep of
 * another process removes it. The label is written before the container starts, so its
 * own keep-alive ends a little after the label's time; a sweep in that gap would kill a
 * container that was about to exit cleanly (and race its auto-remove).
 */
export const EXPIRY_GRACE_MS = 30_000;

interface SweptContainer {
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
  /** Project overlays whose container ended without its owner (lease run out, owner killed): applied or thrown away. */
  overlays?: SettledOverlay[];
  /** Podman's named overlay volumes removed: their owner is gone or their expiry passed, and no container uses them. */
  volumes?: string[];
}

export interface SettledOverlay {
  container: string;
  projectRoot: string;
  mode: 'rw' | 'scratch';
  /** Changes applied to the project (rw). */
  applied: number;
  /** Held back, by path, with where the container's versions were kept. */
  held: string[];
  heldCopies?: string;
  refused: string[];
}

/** Whether a process with this pid exists (another user's counts). */
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
  return (
    owner.host === self.host &&
    owner.pid === self.pid &&
    (owner.start === undefined || self.start === undefined || owner.start === self.start)
  );
}

type ResolvedSweepOptions = Required<Pick<SweepOptions, 'now' | 'isAlive' | 'startOf' | 'self'>> & SweepOptions;

/** What a sweep does with one managed container, and why. */
type SweepVerdict = { remove: SweptContainer['why'] } | { keep: string };

function sweepVerdict(c: ContainerSummary, o: ResolvedSweepOptions): SweepVerdict {
  if (o.keep?.has(c.id)) return { keep: 'this process' };
  if (o.all) return { remove: 'all' };
  const expires = Date.parse(c.labels[LABEL.expiresAt] ?? '');
  const expired = Number.isFinite(expires) && expires <= o.now.getTime();
  if (expired && expires + EXPIRY_GRACE_MS <= o.now.getTime()) return { remove: 'expired' };
  const owner = parseOwner(c.labels[LABEL.owner], c.labels[LABEL.ownerStart]);
  const ending = 'expired, ending by itself';
  if (!owner)
    return Number.isFinite(expires)
      ? { keep: expired ? ending : 'no owner label; its expiry will end it' }
      : { remove: 'unlabelled-owner' };
  // Another machine's process: cannot tell if it lives; its expiry will end the container.
  if (owner.host !== o.self.host) return { keep: expired ? ending : 'owner on another host' };
  if (isSelf(owner, o.self)) return { keep: 'this process' };
  if (!o.isAlive(owner.pid)) return { remove: 'owner-gone' };
  // Alive, but is it the owner? A pid can be reused by an unrelated process.
  if (owner.start !== undefined) {
    const start = o.startOf(owner.pid);
    if (start !== undefined && start !== owner.start) return { remove: 'owner-gone' };
  }
  return { keep: expired ? ending : 'owner alive' };
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
      const verdict = sweepVerdict(c, o);
      if ('keep' in verdict) {
        report.kept.push({ id: c.id, name, owner, why: verdict.keep });
        return;
      }
      const why = verdict.remove;
      const entry: SweptContainer = {
        id: c.id,
        name,
        owner,
        why,
        ...(c.labels[LABEL.expiresAt] ? { expiresAt: c.labels[LABEL.expiresAt] } : {}),
      };
      if (o.dryRun) {
        report.removed.push(entry);
        return;
      }
      try {
        const removed = await within(engine.removeContainer(c.id, true), REMOVE_BOUND_MS, o.clock);
        if (removed) report.removed.push(entry);
        else
          report.failed.push({
            id: c.id,
            error: `the engine did not remove it within ${REMOVE_BOUND_MS / 1000} s (a process frozen in it can hold the engine's lock on it); it ends at its expiry${entry.expiresAt ? ` (${entry.expiresAt})` : ''}`,
          });
      } catch (e) {
        report.failed.push({ id: c.id, error: e instanceof Error ? e.message : String(e) });
      }
    }),
  );
  if (!o.dryRun) {
    const volumes = await sweepVolumes(engine, o);
    if (volumes.length > 0) report.volumes = volumes;
  }
  return report;
}

/**
 * Podman's project overlays are named volumes, which outlive a container that ended by itself
 * (auto-remove) or whose owner was killed. The same verdict as a container's, read from the
 * same labels; a volume still in use is never removed (the engine refuses without force).
 */
async function sweepVolumes(engine: ContainerEngine, o: ResolvedSweepOptions): Promise<string[]> {
  const removed: string[] = [];
  for (const v of await engine.listOverlayVolumes(MANAGED_FILTER)) {
    const verdict = sweepVerdict({ id: v.name, names: [v.name], image: '', labels: v.labels, state: '', createdAt: new Date(0) }, o);
    if ('remove' in verdict && (await engine.removeVolume(v.name))) removed.push(v.name);
  }
  return removed;
}
