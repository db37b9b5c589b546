import { lstatSync, readdirSync } from 'node:fs';
import { join, posix, relative, sep } from 'node:path';
import { realPathOf } from '../paths.js';
import { genaicodePluginFiles, hostRunReason } from './host-run-files.js';

/**
 * What an overlay's changes may not touch in the project, decided on the host's side only:
 * files the host runs (host-run-files.ts), executables, the plugin files the project's own
 * `.genaicoderc` names, and anything that would reach them by another name: a link to one,
 * a link to a folder holding one, a file, link or folder put in the place of one (or of a
 * folder holding one, which replacing would remove whole).
 */
export class HeldRules {
  /** The plugin files the project's `.genaicoderc` names (lower case), read from the host again at each refresh. */
  private plugins = new Set<string>();

  constructor(
    private readonly projectRoot: string,
    private readonly projectReal: string,
  ) {}

  /** Reads the host project's `.genaicoderc` again (an apply starts with it: the user may have edited it). */
  refresh(): void {
    this.plugins = genaicodePluginFiles(this.projectRoot);
  }

  /** Why `rel` is held by its own path (and, given, its mode): a file the host runs, an executable, a plugin file. */
  reason(rel: string, mode?: number): string | undefined {
    const why = hostRunReason(rel, mode);
    if (why) return why;
    return this.plugins.has(rel.toLowerCase()) ? 'a GenAIcode plugin file (named in .genaicoderc), which the host imports' : undefined;
  }

  /** Why the project's own entry at `rel` may not be replaced or removed: held, executable, or a folder holding such a file. */
  projectEntry(rel: string): string | undefined {
    const st = lstatSync(join(this.projectRoot, rel), { throwIfNoEntry: false });
    if (!st) return undefined;
    return (rel === '' ? undefined : this.reason(rel, st.mode)) ?? (st.isDirectory() ? this.inside(rel) : undefined);
  }

  /** Why what the container made at `rel` may not replace the project's entry there. */
  replaced(rel: string): string | undefined {
    const why = this.projectEntry(rel);
    return why ? `replaces what the project holds there, kept: ${why}` : undefined;
  }

  /**
   * Why a link at `rel` to `target` may not be made: what it leads to inside the project (as
   * written, and through the project's own links) is held, lies in a held folder, is an
   * executable, or is a folder holding one. A host tool, or GenAIcode's own edit of the
   * link's harmless name, would write there.
   */
  linkTarget(rel: string, target: string): string | undefined {
    const lexical = posix.normalize(posix.join(posix.dirname(rel), target));
    const real = relative(this.projectReal, realPathOf(join(this.projectRoot, lexical)))
      .split(sep)
      .join('/');
    for (const to of new Set([lexical === '.' ? '' : lexical, real])) {
      if (to === '..' || to.startsWith('../') || posix.isAbsolute(to)) continue;
      const why = (to === '' ? undefined : this.reason(to)) ?? this.projectEntry(to);
      if (why) return `a link to ${to || 'the project folder'}, which is held: ${why}`;
    }
    return undefined;
  }

  /** A held file inside a project folder, found by a bounded walk (a folder removed or replaced whole would take it). */
  inside(rel: string, budget = { left: 10_000 }): string | undefined {
    let names: string[];
    try {
      names = readdirSync(join(this.projectRoot, rel));
    } catch {
      return undefined;
    }
    for (const name of names) {
      if (--budget.left < 0) return 'a large folder, not checked whole';
      const child = rel ? `${rel}/${name}` : name;
      const st = lstatSync(join(this.projectRoot, child), { throwIfNoEntry: false });
      if (!st) continue;
      const why = this.reason(child, st.mode) ?? (st.isDirectory() ? this.inside(child, budget) : undefined);
      if (why) return `${child} inside it is ${why}`;
    }
    return undefined;
  }
}
