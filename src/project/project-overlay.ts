import { randomBytes } from 'node:crypto';
import { chmodSync, chownSync, lstatSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { OverlayVolume } from '../engine/container-engine.js';
import { SandboxError } from '../errors.js';
import { swallowed } from '../debug.js';

/**
 * The folders of one container's project overlay, ours, outside the project:
 * `<state>/overlays/<container>-<random>/` holds `upper/` (every write the container makes
 * in the project lands there), `work/` (the kernel's) and `overlay.json` (whose project,
 * which container, which mode), so that whoever removes the container, this process or a
 * later sweep, can apply or discard what is left.
 *
 * The kernel makes `work/work` as root, mode 0: a plugin that does not run as root cannot
 * empty it. Such a work folder is moved to `<state>/overlays/spent/` and taken as the work
 * folder of the next overlay, whose mount empties it.
 */

export interface OverlayRecord {
  projectRoot: string;
  container: string;
  mode: 'rw' | 'scratch';
  createdAt: string;
  /** `host:pid` of the process that made it. */
  owner: string;
}

export interface ProjectOverlay {
  dir: string;
  upper: string;
  /** The lease file the owner renews (lease.ts). */
  lease: string;
  volume: OverlayVolume;
  record: OverlayRecord;
}

export const OVERLAYS_FOLDER = 'overlays';
const RECORD = 'overlay.json';

/** Paths the overlay's mount options cannot hold (`,` separates options, `:` lower folders). */
function checkMountable(path: string, what: string): void {
  if (/[,:\n\\]/.test(path))
    throw new SandboxError(
      'POLICY_VIOLATION',
      `${what} ${path} holds a comma, colon or backslash, which an overlay's mount options cannot hold: mount the project read-only ('ro') instead.`,
      { data: { rule: 'projectOverlay' } },
    );
}

/** Makes the folders of a new overlay of `projectRoot` for `container`. */
export function makeProjectOverlay(
  stateRoot: string,
  projectRoot: string,
  containerPath: string,
  record: Omit<OverlayRecord, 'projectRoot' | 'createdAt'>,
): ProjectOverlay {
  const overlays = join(stateRoot, OVERLAYS_FOLDER);
  mkdirSync(overlays, { recursive: true, mode: 0o700 });
  const dir = join(overlays, `${record.container}-${randomBytes(4).toString('hex')}`);
  checkMountable(projectRoot, 'The project');
  checkMountable(dir, 'The overlay folder');
  mkdirSync(dir, { mode: 0o700 });
  // The merged root takes the upper folder's owner and mode: the project root's, so that the
  // container user may write where it may in the project (as root, this process gives the
  // project's owner what it makes, see containerUser).
  const root = lstatSync(projectRoot);
  mkdirSync(join(dir, 'upper'), { mode: 0o700 });
  if (process.getuid?.() === 0) chownSync(join(dir, 'upper'), root.uid, root.gid);
  chmodSync(join(dir, 'upper'), root.mode & 0o777);
  if (!claimSpentWork(overlays, join(dir, 'work'))) mkdirSync(join(dir, 'work'), { mode: 0o700 });
  const full: OverlayRecord = { projectRoot, createdAt: new Date().toISOString(), ...record };
  writeFileSync(join(dir, RECORD), JSON.stringify(full), { flag: 'wx', mode: 0o600 });
  writeFileSync(join(dir, 'lease'), '', { flag: 'wx', mode: 0o644 });
  return {
    dir,
    upper: join(dir, 'upper'),
    lease: join(dir, 'lease'),
    volume: { containerPath, lowerDir: projectRoot, upperDir: join(dir, 'upper'), workDir: join(dir, 'work') },
    record: full,
  };
}

function claimSpentWork(overlays: string, to: string): boolean {
  const spent = join(overlays, 'spent');
  let names: string[];
  try {
    names = readdirSync(spent);
  } catch {
    return false;
  }
  for (const name of names) {
    try {
      renameSync(join(spent, name), to); // one rename: two processes cannot claim the same one
      return true;
    } catch (e) {
      swallowed('claiming a spent overlay work folder', e);
    }
  }
  return false;
}

/**
 * Opens again the folders under `dir` that are this user's but closed to it: a container that
 * runs as this user (rootless Podman's keep-id, or a writable mount's user) may `chmod 000` a
 * folder it made, and then no removal could enter it. Only folders, only this user's, and no
 * link followed (lstat first; the container is gone, so nothing swaps an entry in between).
 */
function openOwnFolders(dir: string, me: number | undefined): void {
  let st;
  try {
    st = lstatSync(dir);
  } catch {
    return;
  }
  if (!st.isDirectory() || st.uid !== me) return;
  try {
    if ((st.mode & 0o700) !== 0o700) chmodSync(dir, 0o700);
    for (const name of readdirSync(dir)) openOwnFolders(join(dir, name), me);
  } catch (e) {
    swallowed(`opening the overlay folder ${dir} for its removal`, e);
  }
}

/** Removes an overlay's folders (its container gone); a work folder this user cannot empty is kept for reuse. */
export function removeProjectOverlay(dir: string): void {
  try {
    rmSync(dir, { recursive: true, force: true });
    return;
  } catch (e) {
    swallowed(`removing the overlay folder ${dir}`, e);
  }
  openOwnFolders(join(dir, 'upper'), process.getuid?.());
  try {
    rmSync(dir, { recursive: true, force: true });
    return;
  } catch (e) {
    swallowed(`removing the overlay folder ${dir} after opening its folders`, e);
  }
  const overlays = join(dir, '..');
  try {
    mkdirSync(join(overlays, 'spent'), { recursive: true, mode: 0o700 });
    renameSync(join(dir, 'work'), join(overlays, 'spent', randomBytes(6).toString('hex')));
    rmSync(dir, { recursive: true, force: true });
  } catch (e) {
    swallowed(`keeping the work folder of ${dir} for reuse`, e);
  }
}

/** The overlays left under `stateRoot` (a container that ended without us: its lease ran out, its owner was killed). */
export function listProjectOverlays(stateRoot: string): Array<{ dir: string; record: OverlayRecord }> {
  const overlays = join(stateRoot, OVERLAYS_FOLDER);
  let names: string[];
  try {
    names = readdirSync(overlays);
  } catch {
    return [];
  }
  const uid = process.getuid?.();
  const found: Array<{ dir: string; record: OverlayRecord }> = [];
  for (const name of names) {
    if (name === 'spent') continue;
    const dir = join(overlays, name);
    try {
      const st = lstatSync(dir);
      // Only a real folder of this user's: another user's record is never acted on. And only
      // one made as this file makes them, private (0700, its record 0600): a folder that came
      // with a repository or an archive (git keeps no such modes) is not a record of ours,
      // whatever it claims, so no sweep applies a planted upper folder to the path it names.
      if (!st.isDirectory() || (uid !== undefined && st.uid !== uid) || (st.mode & 0o077) !== 0) continue;
      const rec = lstatSync(join(dir, RECORD));
      if (!rec.isFile() || (uid !== undefined && rec.uid !== uid) || (rec.mode & 0o077) !== 0) continue;
      const record = JSON.parse(readFileSync(join(dir, RECORD), 'utf8')) as OverlayRecord;
      if (typeof record.projectRoot === 'string' && typeof record.container === 'string') found.push({ dir, record });
    } catch (e) {
      swallowed(`reading the overlay record in ${dir}`, e);
    }
  }
  return found;
}
