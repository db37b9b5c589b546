/**
 * What a container with a writable project changed in the user's tree: what this process
 * applied from its overlay (created, changed, deleted), and in the warnings what it did not
 * apply (held back for the user, refused), listed for the model and the user.
 */
export interface ProjectChanges {
  /** Project-relative paths (folders end with /), each list capped; the counts are the totals. */
  created: string[];
  changed: string[];
  deleted: string[];
  counts: { created: number; changed: number; deleted: number };
  /** Changes held back or refused, which the user should look at. */
  warnings?: string[];
  /** Why the list may be incomplete. */
  incomplete?: string;
}

/** Paths listed per kind of change. */
export const MAX_LISTED_CHANGES = 30;

/** One line for a person: "3 created, 1 changed, 0 deleted: a.py, b/ ..." */
export function changesLine(c: ProjectChanges): string {
  const total = c.counts.created + c.counts.changed + c.counts.deleted;
  const held = c.warnings?.length ? `; ${c.warnings.length} not applied (see the warnings)` : '';
  if (total === 0) return `no project files changed${held}`;
  const names = [...c.created.map((p) => `+${p}`), ...c.changed.map((p) => `~${p}`), ...c.deleted.map((p) => `-${p}`)].slice(0, 8);
  return `project: ${c.counts.created} created, ${c.counts.changed} changed, ${c.counts.deleted} deleted (${names.join(', ')}${total > names.length ? ', …' : ''})${held}`;
}
