import { realpathSync } from 'node:fs';
import { basename, dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The package's own folder (src/.. or dist/..), wherever it is installed. */
export const PACKAGE_ROOT = fileURLToPath(new URL('..', import.meta.url));

/** Whether `child` is `parent` or lies inside it (path segments, not string prefixes). */
export function isWithin(child: string, parent: string): boolean {
  const rel = relative(parent, child);
  return rel === '' || (rel !== '..' && !rel.startsWith(`..${sep}`) && !isAbsolute(rel));
}

/**
 * The real path of `p`: links resolved through its deepest existing ancestor, the rest (not
 * made yet) appended. So a path under a link is what the link points at even before it
 * exists: `/allowed/link-to-etc/new` is `/etc/new`.
 */
export function realPathOf(p: string): string {
  const missing: string[] = [];
  let dir = resolve(p);
  for (;;) {
    try {
      return join(realpathSync(dir), ...missing.reverse());
    } catch {
      const parent = dirname(dir);
      if (parent === dir) return resolve(p);
      missing.push(basename(dir));
      dir = parent;
    }
  }
}
