import { randomBytes } from 'node:crypto';
import {
  closeSync,
  constants,
  fchmodSync,
  fchownSync,
  fstatSync,
  lchownSync,
  lstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  readlinkSync,
  renameSync,
  rmSync,
  symlinkSync,
} from 'node:fs';
import { join } from 'node:path';
import { swallowed } from '../debug.js';
import { realPathOf } from '../paths.js';
import { isHostRunFolder } from './host-run-files.js';
import { HeldRules } from './overlay-held.js';
import { HELD_COPIES_BUDGET, saveHeldCopies, syncHostEdits, type AppliedEntries } from './overlay-back.js';
import { isOpaque } from './overlay-xattr.js';
import { copyFd, fdPath, identity, isWhiteout, linkProblem, O_DIR_FLAGS, O_PATH_FLAGS, sameInProject } from './overlay-fs.js';

/**
 * Applies what a container wrote to the upper folder of its project overlay to the project
 * itself, checked entry by entry. The container never writes the host's tree: only this
 * process does, so nothing it makes there can be raced.
 *
 * The upper folder is the container's to change at any moment, so it is read the way
 * `openat` reads: every entry through the descriptor of its folder
 * (`/proc/self/fd/<fd>/<name>`, the last name never followed), a file's type and mode from
 * the descriptor its bytes are read from. A folder swapped for a link, a file for a FIFO,
 * between two looks, changes nothing: what is read is what was checked.
 *
 * In the project: regular files are written to a temporary file created exclusively beside
 * the target and renamed into place (readers never see half a file), modes masked to 0777
 * (set-id bits dropped and reported), owned by this process (or, when it is root, by the
 * project's owner); whiteouts are deletions; links only when they stay inside the project;
 * FIFOs, sockets and devices are never made. Files the host runs by itself
 * (host-run-files.ts) and executables are held back and named.
 */

/** The name a file write stages its copy under, at the top of the working folder. */
const STAGED_WRITE = /^\.gcd-write-[0-9a-f]{24}$/;

export { HELD_COPIES_BUDGET } from './overlay-back.js';
export interface ApplyReport {
  /** Project-relative paths created or changed (folders end with /). */
  created: string[];
  changed: string[];
  deleted: string[];
  /** Not applied: files the host runs, executables, a file changed on both sides. */
  held: Array<{ path: string; why: string }>;
  /** Never made: links out of the project, FIFOs, sockets, devices, what could not be read. */
  refused: Array<{ path: string; why: string }>;
  /** Applied without their set-uid, set-gid or sticky bit. */
  setIdDropped: string[];
}

/** What one apply looks at, at most: entries of the upper folder, and folders deep. */
export const MAX_APPLY_ENTRIES = 20_000;
export const MAX_APPLY_DEPTH = 64;

function emptyReport(): ApplyReport {
  return { created: [], changed: [], deleted: [], held: [], refused: [], setIdDropped: [] };
}

export class OverlayApplier {
  /** The upper entry each applied path was made from, and what the project's entry was right after. */
  private readonly applied: AppliedEntries = new Map();
  /** Entries reported as held or refused, with their identity: each is named once, until it changes. */
  private readonly named = new Map<string, string>();
  /** Everything held so far (the end of the container names them all). */
  readonly heldAll = new Map<string, string>();
  /** Opaque folders whose hidden project entries were removed (`path:inode`). */
  private readonly opaqueCleared = new Set<string>();
  /** Entries looked at in the current apply (MAX_APPLY_ENTRIES). */
  private visits = 0;
  private readonly owner: { uid: number; gid: number } | undefined;
  private readonly projectReal: string;
  private readonly rules: HeldRules;

  constructor(
    readonly upperRoot: string,
    readonly projectRoot: string,
  ) {
    this.projectReal = realPathOf(projectRoot);
    this.rules = new HeldRules(projectRoot, this.projectReal);
    // Run as root, this process would make root-owned files: they go to the project's owner instead.
    const root = lstatSync(projectRoot);
    this.owner = process.getuid?.() === 0 ? { uid: root.uid, gid: root.gid } : undefined;
  }

  /** Walks the upper folder and applies every change not applied yet. Never throws for one entry. */
  apply(): ApplyReport {
    const report = emptyReport();
    this.visits = 0;
    this.rules.refresh();
    let fd: number;
    try {
      fd = openSync(this.upperRoot, O_DIR_FLAGS);
    } catch (e) {
      swallowed('opening the overlay upper folder', e);
      return report;
    }
    try {
      this.walk(fd, '', report);
    } finally {
      closeSync(fd);
    }
    return report;
  }

  private walk(dirFd: number, relDir: string, report: ApplyReport): void {
    // The walk runs on this process's event loop: a container's flood of entries, or a tree
    // thousands of folders deep, costs each apply at most so much, and what is past it is said.
    if (relDir && relDir.split('/').length >= MAX_APPLY_DEPTH) {
      report.refused.push({ path: relDir, why: `deeper than ${MAX_APPLY_DEPTH} folders: what is below is not applied` });
      return;
    }
    let names: string[];
    try {
      names = readdirSync(fdPath(dirFd));
    } catch (e) {
      report.refused.push({ path: relDir || '.', why: `could not be read (${(e as NodeJS.ErrnoException).code ?? 'error'})` });
      return;
    }
    for (const name of names.sort()) {
      const rel = relDir ? `${relDir}/${name}` : name;
      if (++this.visits > MAX_APPLY_ENTRIES) {
        if (this.visits === MAX_APPLY_ENTRIES + 1)
          report.refused.push({
            path: rel,
            why: `the overlay holds more than ${MAX_APPLY_ENTRIES} entries: this one and the rest are not applied`,
          });
        return;
      }
      try {
        this.applyEntry(dirFd, name, rel, report);
      } catch (e) {
        report.refused.push({ path: rel, why: `could not be applied (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})` });
      }
    }
  }

  private applyEntry(dirFd: number, name: string, rel: string, report: ApplyReport): void {
    // A file write's staged copy (container-files.ts), there only until the mover renames it into place.
    if (rel === name && STAGED_WRITE.test(name)) return;
    const st = lstatSync(fdPath(dirFd, name));
    const id = identity(st);
    if (st.isDirectory()) return this.applyFolder(dirFd, name, rel, report);
    if (this.applied.get(rel)?.upper === id || this.named.get(rel) === id) return;
    if (isWhiteout(st)) return this.applyDeletion(rel, id, report);
    if (st.isSymbolicLink()) return this.applyLink(dirFd, name, rel, id, report);
    if (st.isFile()) return this.applyFile(dirFd, name, rel, report);
    const kind = st.isFIFO() ? 'a FIFO' : st.isSocket() ? 'a socket' : 'a device file';
    this.refuse(rel, id, `${kind}: never made in the project`, report);
  }

  private refuse(rel: string, id: string, why: string, report: ApplyReport): void {
    this.named.set(rel, id);
    report.refused.push({ path: rel, why });
  }

  private hold(rel: string, id: string, why: string, report: ApplyReport): void {
    this.named.set(rel, id);
    this.heldAll.set(rel, why);
    report.held.push({ path: rel, why });
  }

  private applyFolder(dirFd: number, name: string, rel: string, report: ApplyReport): void {
    const fd = openSync(fdPath(dirFd, name), O_DIR_FLAGS);
    try {
      const st = fstatSync(fd);
      if (isHostRunFolder(name)) {
        // Held whole, named once (by its inode: its times change with every entry in it), never walked.
        const id = `folder:${st.ino}`;
        if (this.named.get(rel) !== id) this.hold(rel, id, this.rules.reason(rel) ?? 'a folder the host runs', report);
        return;
      }
      const known = this.applied.get(rel)?.upper === identity(st);
      const now = lstatSync(join(this.projectRoot, rel), { throwIfNoEntry: false });
      const replaced = now && !now.isDirectory() ? this.rules.reason(rel, now.mode) : undefined;
      if (replaced) {
        // A held file or an executable replaced by a folder: kept, and nothing below it made.
        const id = `folder:${st.ino}`;
        if (this.named.get(rel) !== id) this.hold(rel, id, `replaced by a folder in the container, kept: ${replaced}`, report);
        return;
      }
      const why = this.rules.reason(rel);
      // A folder the host runs is not made either: its content is held entry by entry below.
      if (!why && !known) {
        this.ensureFolder(rel, st.mode, report);
        // Once per folder: the project's later entries there are the host's own, not hidden ones.
        const key = `${rel}:${st.ino}`;
        if (!this.opaqueCleared.has(key) && isOpaque(fdPath(fd))) {
          this.opaqueCleared.add(key);
          this.clearOpaque(fd, rel, report);
        }
      }
      this.applied.set(rel, { upper: identity(st), project: '' });
      this.walk(fd, rel, report);
    } finally {
      closeSync(fd);
    }
  }

  /** The project's entry at `rel` made a real folder (a link or file there replaced), its parents first. */
  private ensureFolder(rel: string, mode: number, report: ApplyReport): void {
    const path = join(this.projectRoot, rel);
    this.ensureParents(rel);
    const st = lstatSync(path, { throwIfNoEntry: false });
    if (st?.isDirectory()) return;
    if (st) rmSync(path, { recursive: true, force: true });
    mkdirSync(path, { mode: mode & 0o755 });
    if (this.owner) lchownSync(path, this.owner.uid, this.owner.gid);
    (st ? report.changed : report.created).push(`${rel}/`);
  }

  /** Every folder above `rel` in the project is a real folder (made where missing, never followed when a link). */
  private ensureParents(rel: string): void {
    const parts = rel.split('/').slice(0, -1);
    for (let i = 1; i <= parts.length; i++) {
      const path = join(this.projectRoot, ...parts.slice(0, i));
      const st = lstatSync(path, { throwIfNoEntry: false });
      if (st?.isDirectory()) continue;
      if (st) throw new Error(`${parts.slice(0, i).join('/')} is not a folder in the project`);
      mkdirSync(path, { mode: 0o755 });
      if (this.owner) lchownSync(path, this.owner.uid, this.owner.gid);
    }
  }

  /** An opaque folder (removed and made again in the container) hides what the project had there: removed too. */
  private clearOpaque(fd: number, rel: string, report: ApplyReport): void {
    const inUpper = new Set(readdirSync(fdPath(fd)));
    const path = join(this.projectRoot, rel);
    for (const name of readdirSync(path)) {
      if (inUpper.has(name)) continue;
      this.deleteProjectEntry(`${rel}/${name}`, `opaque:${rel}`, report);
    }
  }

  private applyDeletion(rel: string, id: string, report: ApplyReport): void {
    this.deleteProjectEntry(rel, id, report);
    this.applied.set(rel, { upper: id, project: '' });
  }

  private deleteProjectEntry(rel: string, id: string, report: ApplyReport): void {
    const path = join(this.projectRoot, rel);
    const st = lstatSync(path, { throwIfNoEntry: false });
    if (!st) return;
    const why = this.rules.reason(rel, st.mode) ?? (st.isDirectory() ? this.rules.inside(rel) : undefined);
    if (why) return this.hold(rel, id, `deleted in the container, kept: ${why}`, report);
    this.ensureParents(rel);
    rmSync(path, { recursive: true, force: true });
    this.applied.delete(rel);
    report.deleted.push(st.isDirectory() ? `${rel}/` : rel);
  }

  private applyLink(dirFd: number, name: string, rel: string, id: string, report: ApplyReport): void {
    const target = readlinkSync(fdPath(dirFd, name));
    const problem = linkProblem(this.projectRoot, rel, target);
    if (problem) return this.refuse(rel, id, `${problem}: not made in the project`, report);
    const why = this.rules.reason(rel) ?? this.rules.linkTarget(rel, target) ?? this.rules.replaced(rel);
    if (why) return this.hold(rel, id, why, report);
    this.ensureParents(rel);
    const path = join(this.projectRoot, rel);
    const existed = lstatSync(path, { throwIfNoEntry: false }) !== undefined;
    const tmp = `${path}.gcd-${randomBytes(6).toString('hex')}`;
    symlinkSync(target, tmp);
    if (this.owner) lchownSync(tmp, this.owner.uid, this.owner.gid);
    this.replaceWith(tmp, path);
    this.applied.set(rel, { upper: id, project: identity(lstatSync(path)) });
    (existed ? report.changed : report.created).push(rel);
  }

  /** Renames `tmp` over `path`; a folder there (the container replaced it) is removed first. */
  private replaceWith(tmp: string, path: string): void {
    try {
      if (lstatSync(path, { throwIfNoEntry: false })?.isDirectory()) rmSync(path, { recursive: true, force: true });
      renameSync(tmp, path);
    } catch (e) {
      rmSync(tmp, { force: true });
      throw e;
    }
  }

  private applyFile(dirFd: number, name: string, rel: string, report: ApplyReport): void {
    let fd: number;
    try {
      fd = openSync(fdPath(dirFd, name), O_PATH_FLAGS);
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code === 'ELOOP' || code === 'ENOENT') return; // swapped or gone since the listing: the next apply sees it
      throw e;
    }
    try {
      const st = fstatSync(fd);
      const id = identity(st);
      if (!st.isFile()) return; // swapped since the listing
      const path = join(this.projectRoot, rel);
      const now = lstatSync(path, { throwIfNoEntry: false });
      // Rewritten with the same bytes and mode (`sed -i` over files it did not change): no
      // change to apply, hold or report. Its upper copy now hides the project's, so it is
      // tracked as applied: a later host edit is written into it.
      const same = sameInProject(fd, st, this.projectRoot, rel);
      if (same) {
        this.applied.set(rel, { upper: id, project: identity(same) });
        return;
      }
      const why = this.rules.reason(rel, st.mode) ?? this.rules.replaced(rel);
      if (why) return this.hold(rel, id, why, report);
      const before = this.applied.get(rel);
      if (before && before.project !== '' && (!now || identity(now) !== before.project))
        return this.hold(rel, id, 'changed both on the host and in the container: the host version kept', report);
      this.ensureParents(rel);
      const tmp = `${path}.gcd-${randomBytes(6).toString('hex')}`;
      const out = openSync(tmp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
      try {
        copyFd(fd, out);
        if (this.owner) fchownSync(out, this.owner.uid, this.owner.gid);
        // Never writable by group or others: a 0666 file would let any local user rewrite it.
        fchmodSync(out, st.mode & 0o755);
      } catch (e) {
        closeSync(out);
        rmSync(tmp, { force: true });
        throw e;
      }
      closeSync(out);
      this.replaceWith(tmp, path);
      if ((st.mode & 0o7000) !== 0) report.setIdDropped.push(rel);
      this.applied.set(rel, { upper: id, project: identity(lstatSync(path)) });
      (now ? report.changed : report.created).push(rel);
    } finally {
      closeSync(fd);
    }
  }

  /**
   * Files applied earlier stay in the upper folder (it may not change under a mounted
   * overlay), where they hide the project's version from the container: a host edit made
   * since is written into that upper copy (overlay-back.ts). Returns the paths written, and
   * the files the host deleted, for the container to delete.
   */
  syncHostEdits(): { written: string[]; deletedOnHost: string[] } {
    return syncHostEdits(this.applied, this.projectRoot, this.upperRoot);
  }

  /** Copies the held files' container versions to `dest`, for review (overlay-back.ts). Returns how many. */
  saveHeld(dest: string, budgetBytes = HELD_COPIES_BUDGET): number {
    return saveHeldCopies(this.heldAll.keys(), this.upperRoot, dest, budgetBytes);
  }
}
