/**
 * Who owns a test's project folder: a developer's uid (1000) when the tests run as root, as
 * on a workstation the project belongs to its user and not to root; the test's own uid otherwise.
 */
import { chownSync, lstatSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

export const isRoot = process.getuid?.() === 0;
export const DEV = { uid: 1000, gid: 1000 };
export const owner = isRoot ? DEV : { uid: process.getuid?.() ?? 0, gid: process.getgid?.() ?? 0 };

/** Gives `dir` and everything under it (links not followed) to the developer's uid. */
export function chownTree(dir: string): void {
  chownSync(dir, DEV.uid, DEV.gid);
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (lstatSync(p).isDirectory()) chownTree(p);
    else chownSync(p, DEV.uid, DEV.gid);
  }
}
