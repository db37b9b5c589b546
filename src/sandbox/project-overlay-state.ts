import { lstat, readdir } from 'node:fs/promises';
import type { Dirent } from 'node:fs';
import { join, posix } from 'node:path';
import { swallowed } from '../debug.js';
import type { ContainerHelpers } from '../commands/container-helpers.js';
import { OverlayApplier, type ApplyReport } from '../project/overlay-apply.js';
import { heldFolder, markApplied } from './overlay-orphans.js';
import type { ProjectChanges } from '../project/project-changes.js';
import { MAX_LISTED_CHANGES } from '../project/project-changes.js';
import { removeProjectOverlay } from '../project/project-overlay.js';

/** The disk blocks under `dir`, never following a link; what vanishes during the walk counts nothing. */
async function folderBytes(dir: string): Promise<number> {
  let total = 0;
  let entries: Dirent[];
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch {
    return 0;
  }
  for (const e of entries) {
    const p = join(dir, e.name);
    try {
      const st = await lstat(p);
      // A sparse file costs the host its full size once applied (or kept as a held copy): its
      // size counts, not only the blocks it holds in the upper folder.
      total += Math.max(st.blocks * 512, st.isFile() ? st.size : 0);
      if (st.isDirectory()) total += await folderBytes(p);
    } catch {
      // removed while it was walked
    }
  }
  return total;
}

/** Lines of what was not applied, per answer at most. */
const MAX_NOT_APPLIED_LINES = 10;

/**
 * One sandbox's project overlay: applied after every command and file write (`rw`), or
 * only thrown away (`scratch`); settled once the container is gone. Keeps the running
 * list of what reached the project, what was held back and what was refused.
 */
export class ProjectOverlayState {
  private readonly applier: OverlayApplier | undefined;
  private readonly created = new Set<string>();
  private readonly changed = new Set<string>();
  private readonly deleted = new Set<string>();
  private readonly refused = new Map<string, string>();
  private readonly setIdDropped = new Set<string>();
  private heldCopies: string | undefined;
  private settled = false;

  constructor(
    readonly mode: 'rw' | 'scratch',
    private readonly projectRoot: string,
    private readonly containerRoot: string,
    private readonly folders: { dir: string; upper: string },
    private readonly helpers: ContainerHelpers,
  ) {
    this.applier = mode === 'rw' ? new OverlayApplier(folders.upper, projectRoot) : undefined;
  }

  /** What the upper folder costs the host's disk: its blocks, and a sparse file's full size (applying it writes all of it). */
  async upperBytes(): Promise<number> {
    return folderBytes(this.folders.upper);
  }

  /**
   * Before a command or a file operation: the host's edits of files the container changed
   * earlier (whose copies in the upper folder would hide them) are brought into its view.
   */
  async beforeUse(): Promise<void> {
    if (!this.applier || this.settled) return;
    const { deletedOnHost } = this.applier.syncHostEdits();
    if (deletedOnHost.length)
      await this.helpers
        .removeFiles(deletedOnHost.map((r) => posix.join(this.containerRoot, r)))
        .catch((e: unknown) => swallowed('removing files the host deleted from the container', e));
  }

  /** Applies what the container changed since the last time; returns the lines for the answer (not applied, with why). */
  apply(): string[] {
    if (!this.applier || this.settled) return [];
    let report: ApplyReport;
    try {
      report = this.applier.apply();
    } catch (e) {
      swallowed('applying the project overlay', e);
      return [];
    }
    this.record(report);
    markApplied(this.folders.dir);
    return [
      ...report.held.map((h) => `${h.path}: held back, not applied (${h.why})`),
      ...report.refused.map((r) => `${r.path}: ${r.why}`),
      ...report.setIdDropped.map((p) => `${p}: applied without its set-uid/set-gid bits`),
    ].slice(0, MAX_NOT_APPLIED_LINES);
  }

  private record(r: ApplyReport): void {
    for (const p of r.created) if (!this.changed.has(p)) this.created.add(p);
    for (const p of r.changed) if (!this.created.has(p)) this.changed.add(p);
    for (const p of r.deleted) {
      if (!this.created.delete(p)) this.deleted.add(p);
      this.changed.delete(p);
    }
    for (const x of r.refused) this.refused.set(x.path, x.why);
    for (const p of r.setIdDropped) this.setIdDropped.add(p);
  }

  /** Once the container is gone: the last changes applied (rw), held files' versions kept, the folders removed. Idempotent. */
  settle(): void {
    if (this.settled) return;
    try {
      this.apply();
      if (this.applier?.heldAll.size) {
        const dest = heldFolder(join(this.folders.dir, '..', '..'), this.folders.dir);
        if (this.applier.saveHeld(dest) > 0) this.heldCopies = dest;
      }
    } finally {
      this.settled = true;
      removeProjectOverlay(this.folders.dir);
    }
  }

  /** What reached the project, and what did not (rw); undefined for scratch, whose writes never reach it. */
  changes(): ProjectChanges | undefined {
    if (!this.applier) return undefined;
    const list = (s: Set<string>) => [...s].sort();
    const [created, changed, deleted] = [list(this.created), list(this.changed), list(this.deleted)];
    const held = [...this.applier.heldAll];
    const warnings = [
      ...held
        .slice(0, MAX_LISTED_CHANGES)
        .map(
          ([p, why]) =>
            `${p}: changed in the container but NOT applied (${why}); ${this.heldCopies ? `the container's version is in ${this.heldCopies}` : 'the container still has its version'}: review it and copy it by hand if you want it`,
        ),
      ...[...this.refused].slice(0, 10).map(([p, why]) => `${p}: ${why}`),
      ...[...this.setIdDropped].slice(0, 5).map((p) => `${p}: applied without its set-uid/set-gid bits`),
    ];
    return {
      created: created.slice(0, MAX_LISTED_CHANGES),
      changed: changed.slice(0, MAX_LISTED_CHANGES),
      deleted: deleted.slice(0, MAX_LISTED_CHANGES),
      counts: { created: created.length, changed: changed.length, deleted: deleted.length },
      ...(warnings.length ? { warnings } : {}),
      ...(held.length > MAX_LISTED_CHANGES
        ? { incomplete: `${held.length} changes held back; the first ${MAX_LISTED_CHANGES} are named` }
        : {}),
    };
  }
}
