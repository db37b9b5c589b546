import {
  closeSync,
  constants,
  existsSync,
  lstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  renameSync,
  rmSync,
  utimesSync,
  type Stats,
} from 'node:fs';
import { basename, join } from 'node:path';
import type { ContainerEngine } from '../engine/container-engine.js';
import { swallowed } from '../debug.js';
import { currentOwner, parseOwner } from './labels.js';
import { OverlayApplier, type ApplyReport } from '../project/overlay-apply.js';
import { listProjectOverlays, removeProjectOverlay } from '../project/project-overlay.js';
import { processAlive, type SettledOverlay } from './sweep.js';

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
    // This applier has no memory of what its owner applied: what the user edited on the host
    // since the owner's last apply is kept, and the container's version set aside with the held ones.
    const kept = setAsideEditedSince(dir, projectRoot, appliedAt(dir), heldFolder(stateRoot, dir));
    const applier = new OverlayApplier(join(dir, 'upper'), projectRoot);
    const report: ApplyReport = applier.apply();
    result.applied = report.created.length + report.changed.length + report.deleted.length;
    result.held = [...kept, ...applier.heldAll.keys()];
    result.refused = report.refused.map((r) => `${r.path}: ${r.why}`);
    if (result.held.length) {
      const dest = heldFolder(stateRoot, dir);
      if (applier.saveHeld(dest) > 0) result.heldCopies = dest;
    }
  }
  removeProjectOverlay(dir);
  return result;
}

/** The owner applied the overlay now: a later settling without it keeps host edits made after this. */
export function markApplied(dir: string): void {
  try {
    const stamp = join(dir, APPLIED_STAMP);
    const now = new Date();
    if (existsSync(stamp)) utimesSync(stamp, now, now);
    else closeSync(openSync(stamp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600));
  } catch (e) {
    swallowed('stamping the overlay as applied', e);
  }
}

/** When the owner last applied the overlay (or made it): host files changed after it are the user's edits. */
function appliedAt(dir: string): number {
  for (const name of [APPLIED_STAMP, 'overlay.json']) {
    try {
      return lstatSync(join(dir, name)).mtimeMs;
    } catch {
      // not there: the next one
    }
  }
  return 0;
}

/**
 * Entries of the upper folder whose project counterpart the user changed after `since`
 * (files, and files the container deleted): moved out of the upper folder (the container is
 * gone, the folder is ours) into `keep` (files only), so applying cannot revert the user's edit.
 */
function setAsideEditedSince(dir: string, projectRoot: string, since: number, keep: string): string[] {
  const upper = join(dir, 'upper');
  const setAside: string[] = [];
  const walk = (rel: string): void => {
    let names: string[];
    try {
      names = readdirSync(join(upper, rel));
    } catch {
      return;
    }
    for (const name of names) {
      const r = rel ? join(rel, name) : name;
      let up: Stats, host: Stats;
      try {
        up = lstatSync(join(upper, r));
      } catch {
        continue;
      }
      if (up.isDirectory()) {
        walk(r);
        continue;
      }
      try {
        host = lstatSync(join(projectRoot, r));
      } catch {
        continue; // not on the host: nothing of the user's to revert
      }
      if (!host.isFile() || host.mtimeMs <= since) continue;
      try {
        if (up.isFile()) {
          mkdirSync(join(keep, rel), { recursive: true, mode: 0o700 });
          renameSync(join(upper, r), join(keep, r));
        }
      } catch (e) {
        swallowed(`keeping the container's version of ${r}, edited on the host`, e);
      }
      // Whatever happened to the copy, the entry must not reach the project.
      rmSync(join(upper, r), { force: true });
      setAside.push(r);
    }
  };
  walk('');
  return setAside;
}

const APPLIED_STAMP = 'applied';

/** Where the container's versions of held files are kept for the user. */
export function heldFolder(stateRoot: string, overlayDir: string): string {
  return join(stateRoot, 'held', basename(overlayDir));
}
