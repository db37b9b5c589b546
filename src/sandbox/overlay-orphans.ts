import { basename, join } from 'node:path';
import type { ContainerEngine } from '../engine/container-engine.js';
import { swallowed } from '../debug.js';
import { currentOwner, parseOwner } from './labels.js';
import { OverlayApplier, type ApplyReport } from './overlay-apply.js';
import { listProjectOverlays, removeProjectOverlay } from './project-overlay.js';
import type { SettledOverlay } from './sweep.js';

/**
 * Overlays left behind by a container that ended without its owner: the owner was killed
 * (SIGKILL: no exit hook) and its container stopped at its lease or was swept. Whoever
 * finds one, once its container is gone (nothing can write its upper folder any more),
 * applies it with the same checks as the owner would (`rw`) or throws it away (`scratch`).
 * An overlay whose owner process still lives is its owner's to settle.
 */
export async function settleOrphanOverlays(
  engine: ContainerEngine,
  stateRoot: string,
  isAlive: (pid: number) => boolean = processAlive,
): Promise<SettledOverlay[]> {
  const self = currentOwner();
  const settled: SettledOverlay[] = [];
  for (const { dir, record } of listProjectOverlays(stateRoot)) {
    const owner = parseOwner(record.owner);
    if (!owner || owner.host !== self.host || owner.pid === self.pid || isAlive(owner.pid)) continue;
    try {
      if (await engine.inspectContainer(record.container)) continue; // still there: the container sweep removes it first
      settled.push(settleOverlay(dir, record.container, record.projectRoot, record.mode, stateRoot));
    } catch (e) {
      swallowed(`settling the overlay ${dir}`, e);
    }
  }
  return settled;
}

/** Applies (rw) or discards (scratch) an overlay whose container is gone, keeps the held files' copies, removes its folders. */
export function settleOverlay(
  dir: string,
  container: string,
  projectRoot: string,
  mode: 'rw' | 'scratch',
  stateRoot: string,
): SettledOverlay {
  const result: SettledOverlay = { container, projectRoot, mode, applied: 0, held: [], refused: [] };
  if (mode === 'rw') {
    const applier = new OverlayApplier(join(dir, 'upper'), projectRoot);
    const report: ApplyReport = applier.apply();
    result.applied = report.created.length + report.changed.length + report.deleted.length;
    result.held = [...applier.heldAll.keys()];
    result.refused = report.refused.map((r) => `${r.path}: ${r.why}`);
    if (result.held.length) {
      const dest = heldFolder(stateRoot, dir);
      if (applier.saveHeld(dest) > 0) result.heldCopies = dest;
    }
  }
  removeProjectOverlay(dir);
  return result;
}

/** Where the container's versions of held files are kept for the user. */
export function heldFolder(stateRoot: string, overlayDir: string): string {
  return join(stateRoot, 'held', basename(overlayDir));
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}
