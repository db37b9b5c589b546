import { watch, type FSWatcher } from 'node:fs';
import { lstat, readlink, stat, unlink } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { isWithin, realPathOf } from '../paths.js';
import { swallowed } from '../debug.js';
import { takeSnapshot, type ProjectSnapshot } from './project-changes.js';

/**
 * Links a container plants in a writable project mount, read on the host. GenAIcode follows
 * links when it collects the project's files for the model (statSync in find-files), and so
 * do editors and indexers: a container's `notes.md -> ~/.ssh/id_rsa`, or `docs -> /home`,
 * would send host files to the model. So a link the container made or changed that leads,
 * on the host, to an existing folder outside the project, or to an existing file outside it
 * and outside the system's program folders (a venv's `bin/python -> /usr/bin/python3` stays),
 * is removed, and the answers say so. It is checked as each change is seen (a watch on the
 * project) and again after every command and before the change list, so nothing the
 * container left is there when the next prompt is built. Links the project had before are
 * the user's and are left alone.
 */

/** Where a link may lead to an existing file outside the project: installed programs and libraries. */
const SYSTEM_PROGRAMS = ['/usr', '/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32', '/opt'];

export interface RemovedLink {
  path: string;
  target: string;
}

/** The watch's changes are checked together at most this often (a flood of events must not flood the host). */
const WATCH_BATCH_MS = 100;
/** Paths waiting for a batch at most; beyond, the sweep after the command finds the rest. */
const MAX_PENDING = 2000;

export class OutsideLinkGuard {
  readonly removed: RemovedLink[] = [];
  /** Links found that could not be removed: named in every change list. */
  readonly stuck = new Map<string, string>();
  private watcher: FSWatcher | undefined;
  private reported = 0;
  private readonly pending = new Set<string>();
  private batch: NodeJS.Timeout | undefined;

  /**
   * @param removal `inContainer` removes the links at these project-relative paths that are
   *        still links, inside the container (the host must never follow a folder the
   *        container swapped); once `containerGone`, nothing can swap one, and they are
   *        removed on the host
   */
  constructor(
    private readonly root: string,
    private readonly before: Promise<ProjectSnapshot>,
    private readonly skip: ReadonlySet<string>,
    private readonly removal: { inContainer: (paths: string[]) => Promise<void>; containerGone: () => boolean },
  ) {}

  private async remove(rel: string): Promise<void> {
    if (!this.removal.containerGone()) return this.removal.inContainer([rel]);
    const parent = dirname(join(this.root, rel));
    if (realPathOf(parent) !== parent) return; // a folder on the way is a link now
    await unlink(join(this.root, rel));
  }

  /** Watches the project while the container runs; a watch that cannot be set up leaves the sweeps. */
  watch(): void {
    try {
      this.watcher = watch(this.root, { recursive: true, persistent: false }, (_event, name) => {
        if (!name || this.pending.size >= MAX_PENDING) return;
        this.pending.add(String(name));
        this.batch ??= setTimeout(() => void this.checkPending(), WATCH_BATCH_MS);
        this.batch.unref();
      });
      this.watcher.on('error', (e) => swallowed('watching the project for links', e));
    } catch (e) {
      swallowed('watching the project for links', e);
    }
  }

  private async checkPending(): Promise<void> {
    const paths = [...this.pending];
    this.pending.clear();
    try {
      for (const p of paths) await this.check(p).catch((e: unknown) => swallowed(`checking the link ${p}`, e));
    } finally {
      this.batch = undefined;
      if (this.pending.size > 0 && this.watcher) this.batch = setTimeout(() => void this.checkPending(), WATCH_BATCH_MS).unref();
    }
  }

  close(): void {
    this.watcher?.close();
    this.watcher = undefined;
    if (this.batch) clearTimeout(this.batch);
    this.batch = undefined;
    this.pending.clear();
  }

  /** Checks every link of the project; returns the links removed since the last call. */
  async sweep(): Promise<RemovedLink[]> {
    const now = await takeSnapshot(this.root, this.skip);
    await Promise.all([...now.entries].filter(([, e]) => e.kind === 'link').map(([path]) => this.check(path)));
    const fresh = this.removed.slice(this.reported);
    this.reported = this.removed.length;
    return fresh;
  }

  private readonly checking = new Map<string, Promise<void>>();

  /** One check per path at a time: the watch and a sweep may see the same link together. */
  private check(rel: string): Promise<void> {
    let p = this.checking.get(rel);
    if (!p) {
      p = this.checkOnce(rel).finally(() => this.checking.delete(rel));
      this.checking.set(rel, p);
    }
    return p;
  }

  private async checkOnce(rel: string): Promise<void> {
    const path = join(this.root, rel);
    let st;
    try {
      st = await lstat(path);
    } catch {
      return; // gone again
    }
    if (!st.isSymbolicLink()) return;
    const old = (await this.before).entries.get(rel);
    if (old?.kind === 'link' && old.ino === st.ino && old.ctimeMs === st.ctimeMs) return; // the user's own link
    const target = await readlink(path);
    const resolved = realPathOf(resolve(dirname(path), target));
    if (isWithin(resolved, this.root)) return;
    let lead;
    try {
      lead = await stat(resolved);
    } catch {
      return; // leads nowhere on the host: nothing is read through it
    }
    if (!lead.isDirectory() && SYSTEM_PROGRAMS.some((p) => isWithin(resolved, p))) return;
    try {
      await this.remove(rel);
    } catch (e) {
      swallowed(`removing the link ${rel}`, e);
    }
    if ((await lstat(path).catch(() => undefined))?.isSymbolicLink() === true) this.stuck.set(rel, target);
    else {
      this.stuck.delete(rel);
      this.removed.push({ path: rel, target });
    }
  }
}
