import { lstat, opendir } from 'node:fs/promises';
import { join } from 'node:path';
import { swallowed } from '../debug.js';

/**
 * What a container with the project mounted writable did to the user's tree: a listing of
 * the project taken before the container starts, compared with one taken when the answer
 * is made. An entry is changed when its type, size, mode, inode, modification or status
 * change time differs: the status change time (ctime) cannot be set back by a command, so
 * content rewritten with its old size and mtime restored is still seen.
 */

interface Entry {
  kind: 'file' | 'folder' | 'link' | 'other';
  size: number;
  mode: number;
  ino: number;
  mtimeMs: number;
  ctimeMs: number;
}

export interface ProjectSnapshot {
  entries: Map<string, Entry>;
  /** Set when the walk stopped at the entry limit. */
  incomplete?: string;
}

export interface ProjectChanges {
  /** Project-relative paths (folders end with /), each list capped; the counts are the totals. */
  created: string[];
  changed: string[];
  deleted: string[];
  counts: { created: number; changed: number; deleted: number };
  /** Changes the user should look at before running tools on the host (git folders). */
  warnings?: string[];
  /** Why the list may be incomplete. */
  incomplete?: string;
}

/** Entries walked at most (a snapshot of 100k entries takes about a second). */
export const MAX_SNAPSHOT_ENTRIES = 100_000;
/** Paths listed per kind of change. */
export const MAX_LISTED_CHANGES = 30;

function kindOf(st: { isFile(): boolean; isDirectory(): boolean; isSymbolicLink(): boolean }): Entry['kind'] {
  return st.isFile() ? 'file' : st.isDirectory() ? 'folder' : st.isSymbolicLink() ? 'link' : 'other';
}

/**
 * Lists the project without following links; folders the walk cannot read are skipped, and
 * so are the paths in `skip` (read-only in the container: .git, and the placeholders
 * mounted at absent protected names).
 */
export async function takeSnapshot(
  root: string,
  skip: ReadonlySet<string> = new Set(),
  maxEntries = MAX_SNAPSHOT_ENTRIES,
): Promise<ProjectSnapshot> {
  const entries = new Map<string, Entry>();
  const pending: string[] = [''];
  while (pending.length > 0) {
    const rel = pending.pop() ?? '';
    // Read entry by entry: a folder of millions of names costs no more than the limit.
    const names: string[] = [];
    try {
      const dir = await opendir(join(root, rel));
      for await (const entry of dir) {
        names.push(entry.name);
        if (entries.size + names.length > maxEntries) break;
      }
    } catch (e) {
      swallowed(`listing ${rel || '.'} of the project`, e);
      continue;
    }
    const stats = await Promise.all(
      names.map(async (name) => {
        const path = rel ? `${rel}/${name}` : name;
        if (skip.has(path)) return undefined;
        try {
          return { path, st: await lstat(join(root, path)) };
        } catch (e) {
          swallowed(`reading ${path} of the project`, e);
          return undefined;
        }
      }),
    );
    for (const s of stats) {
      if (!s) continue;
      if (entries.size >= maxEntries)
        return { entries, incomplete: `the project has more than ${maxEntries} files and folders; changes beyond them are not listed` };
      const kind = kindOf(s.st);
      entries.set(s.path, { kind, size: s.st.size, mode: s.st.mode, ino: s.st.ino, mtimeMs: s.st.mtimeMs, ctimeMs: s.st.ctimeMs });
      if (kind === 'folder') pending.push(s.path);
    }
  }
  return { entries };
}

function shown(path: string, e: Entry): string {
  return e.kind === 'folder' ? `${path}/` : path;
}

/** A folder's own times change whenever an entry is added or removed: only its type and mode count. */
function differs(a: Entry, b: Entry): boolean {
  if (a.kind !== b.kind || a.mode !== b.mode || a.ino !== b.ino) return true;
  if (a.kind === 'folder') return false;
  return a.size !== b.size || a.mtimeMs !== b.mtimeMs || a.ctimeMs !== b.ctimeMs;
}

const GIT_FOLDER = /(^|\/)\.git(\/|$)/;

/**
 * Files the host runs without anyone choosing to run the project's code: npm scripts (and
 * GenAIcode's lintCommand, often `npm run lint`), lint and build configs, git hooks and
 * attributes, direnv, editor tasks, pre-commit, pytest's conftest.
 */
const HOST_RUN =
  /^(package\.json|Makefile|makefile|GNUmakefile|\.envrc|\.gitattributes|\.gitmodules|\.pre-commit-config\.ya?ml|conftest\.py|pyproject\.toml|setup\.py|setup\.cfg|tox\.ini|\.npmrc|\.yarnrc(\.yml)?|[^/]*\.config\.[cm]?[jt]s|\.eslintrc[^/]*|\.prettierrc[^/]*)$|^(\.husky|\.githooks|\.vscode|\.idea)\//;

export function diffSnapshots(before: ProjectSnapshot, after: ProjectSnapshot, cap = MAX_LISTED_CHANGES): ProjectChanges {
  const created: string[] = [];
  const changed: string[] = [];
  const deleted: string[] = [];
  for (const [path, e] of after.entries) {
    const old = before.entries.get(path);
    if (!old) created.push(shown(path, e));
    else if (differs(old, e)) changed.push(shown(path, e));
  }
  for (const [path, e] of before.entries) if (!after.entries.has(path)) deleted.push(shown(path, e));
  for (const list of [created, changed, deleted]) list.sort();
  const git = [...created, ...changed].filter((p) => GIT_FOLDER.test(p));
  const gitRoots = [...new Set(git.map((p) => p.slice(0, p.search(/\.git(\/|$)/) + 4)))];
  const hostRun = [...created, ...changed].filter((p) => HOST_RUN.test(p.replace(/\/$/, '')));
  const incomplete = before.incomplete ?? after.incomplete;
  const warnings = [
    ...gitRoots
      .slice(0, 5)
      .map(
        (r) =>
          `${r}: a git folder the container made or changed; git runs programs named in its config and hooks, so look at it before running git there`,
      ),
    ...hostRun
      .slice(0, 5)
      .map(
        (p) =>
          `${p}: a file the host runs (npm scripts, lint, hooks, build or editor config) changed by the container; review it before running anything in the project`,
      ),
  ];
  return {
    created: created.slice(0, cap),
    changed: changed.slice(0, cap),
    deleted: deleted.slice(0, cap),
    counts: { created: created.length, changed: changed.length, deleted: deleted.length },
    ...(warnings.length ? { warnings } : {}),
    ...(incomplete ? { incomplete } : {}),
  };
}

/** One line for a person: "3 created, 1 changed, 0 deleted: a.py, b/ ..." */
export function changesLine(c: ProjectChanges): string {
  const total = c.counts.created + c.counts.changed + c.counts.deleted;
  if (total === 0) return 'no project files changed';
  const names = [...c.created.map((p) => `+${p}`), ...c.changed.map((p) => `~${p}`), ...c.deleted.map((p) => `-${p}`)].slice(0, 8);
  return `project: ${c.counts.created} created, ${c.counts.changed} changed, ${c.counts.deleted} deleted (${names.join(', ')}${total > names.length ? ', …' : ''})`;
}
