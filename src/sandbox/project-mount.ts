import { lstatSync, mkdirSync, readdirSync, rmdirSync } from 'node:fs';
import { join, posix, relative, sep } from 'node:path';
import type { BindMount } from '../engine/container-engine.js';
import { SandboxError } from '../errors.js';
import { isWithin, PACKAGE_ROOT, realPathOf } from '../paths.js';
import { INVARIANTS, PROTECTED_PROJECT_NAMES, type ProjectMount } from '../policy/policy.js';
import { swallowed } from '../debug.js';

/**
 * The GenAIcode project mounted at the working folder: the project root's bind, and with a
 * writable mount the read-only binds over the protected paths (policy.ts
 * PROTECTED_PROJECT_NAMES and the plugin's own folder when it lies inside the project).
 *
 * A protected name that does not exist yet would be free for the container to create (a
 * `.git` with `core.fsmonitor` runs a program at the user's next `git status`). So an empty,
 * read-only folder of ours is mounted at that name: the engine makes the mount point, an
 * empty folder, in the project while the container runs, and `removePlaceholders` takes it
 * away after the container is gone (only if it is still an empty folder).
 */
export interface ProjectBinds {
  hostRoot: string;
  containerRoot: string;
  mount: Exclude<ProjectMount, 'none'>;
  binds: BindMount[];
  /** Host paths of the empty mount points the engine makes for absent protected names. */
  placeholders: string[];
  /** Project-relative paths that are read-only inside the container. */
  protected: string[];
}

function protectionViolation(detail: string): SandboxError {
  return new SandboxError('POLICY_VIOLATION', `${detail}: not allowed (${INVARIANTS.protectedProjectPaths}).`, {
    data: { rule: 'protectedProjectPaths' },
  });
}

/** An empty folder of ours, mounted read-only at absent protected names. */
function emptyFolder(stateDir: string): string {
  const dir = join(stateDir, 'empty-read-only');
  mkdirSync(stateDir, { recursive: true, mode: 0o700 });
  try {
    mkdirSync(dir, { mode: 0o555 });
  } catch (e) {
    swallowed('making the empty placeholder folder (it may exist)', e);
  }
  const st = lstatSync(dir);
  const uid = process.getuid?.();
  if (!st.isDirectory() || (uid !== undefined && st.uid !== uid) || readdirSync(dir).length > 0)
    throw new SandboxError('POLICY_VIOLATION', `${dir} must be an empty folder of this user's (it is mounted read-only into containers).`, {
      data: { rule: 'protectedProjectPaths' },
    });
  return dir;
}

/**
 * @param hostRoot the project root (real path)
 * @param stateDir a folder of ours that holds the empty placeholder folder
 * @throws SandboxError POLICY_VIOLATION when a protected name is a link, or the plugin is the project itself (writable mount)
 */
export function projectBinds(
  hostRoot: string,
  containerRoot: string,
  mount: Exclude<ProjectMount, 'none'>,
  stateDir: string,
  pluginRoot: string = realPathOf(PACKAGE_ROOT),
): ProjectBinds {
  const result: ProjectBinds = {
    hostRoot,
    containerRoot,
    mount,
    binds: [{ hostPath: hostRoot, containerPath: containerRoot, readOnly: mount === 'ro' }],
    placeholders: [],
    protected: [],
  };
  if (mount === 'ro') return result;
  if (isWithin(hostRoot, pluginRoot))
    throw protectionViolation(`writable mount of ${hostRoot}, which is inside the plugin's own folder ${pluginRoot}`);
  const names: string[] = [...PROTECTED_PROJECT_NAMES];
  // The plugin's folder by its top folder in the project (node_modules, typically with
  // GenAIcode itself): a bind deeper down would not hold, since a folder that holds a mount
  // point can be renamed away and a new one made in its place.
  const top = isWithin(pluginRoot, hostRoot) ? relative(hostRoot, pluginRoot).split(sep)[0] : undefined;
  if (top && !names.includes(top)) names.push(top);
  let empty: string | undefined;
  for (const name of names) {
    const hostPath = join(hostRoot, name);
    const containerPath = posix.join(containerRoot, ...name.split('/'));
    // Every folder on the way, and the name itself, must be real: the engine follows links.
    const parts = name.split('/');
    for (let i = 1; i <= parts.length; i++) {
      const p = join(hostRoot, ...parts.slice(0, i));
      let st;
      try {
        st = lstatSync(p);
      } catch {
        st = undefined;
      }
      if (st?.isSymbolicLink()) throw protectionViolation(`writable mount of the project: ${relative(hostRoot, p)} is a link`);
      if (!st) {
        if (i < parts.length) throw protectionViolation(`writable mount of the project: ${relative(hostRoot, p)} is missing`);
        empty ??= emptyFolder(stateDir);
        result.binds.push({ hostPath: empty, containerPath, readOnly: true });
        result.placeholders.push(hostPath);
      } else if (i === parts.length) {
        result.binds.push({ hostPath, containerPath, readOnly: true });
      }
    }
    result.protected.push(name);
  }
  return result;
}

/** Removes the empty mount points the engine made for absent protected names (never a non-empty one). */
export function removePlaceholders(placeholders: readonly string[]): void {
  for (const p of placeholders) {
    try {
      const st = lstatSync(p);
      if (st.isDirectory() && readdirSync(p).length === 0) rmdirSync(p);
    } catch (e) {
      swallowed(`removing the placeholder ${p}`, e);
    }
  }
}
