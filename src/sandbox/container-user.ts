import { statSync } from 'node:fs';
import type { Config } from '../config/config-schema.js';
import { swallowed } from '../debug.js';
import { SandboxError } from '../errors.js';
import { INVARIANTS } from '../policy/policy.js';

/**
 * Who a container runs as. With a writable mount, whatever the container writes lands on
 * the host with the container user's ids, set-uid bits included: so it runs as the host
 * user (this process's uid:gid; when that is root, the owner of the mounted folders if
 * they have one non-root owner), never as root unless `allowRootWithWritableMounts`. A
 * configured user must then be numeric: a name is resolved by the image, which may map it to 0.
 * @throws SandboxError POLICY_VIOLATION when that would be root without the opt-in.
 */
export function containerUser(
  c: Pick<Config, 'user' | 'allowRootWithWritableMounts'>,
  mounts: ReadonlyArray<{ hostPath: string; writable: boolean }>,
  hostUser: { uid?: number; gid?: number } = { uid: process.getuid?.(), gid: process.getgid?.() },
): string | undefined {
  const writable = mounts.filter((m) => m.writable);
  if (writable.length === 0) return c.user;
  let user = c.user;
  // Both ids, as numbers: a name is resolved by the image, and a bare uid gets the group of
  // the image's passwd entry for it, or gid 0 when there is none.
  if (user !== undefined && !/^\d+:\d+$/.test(user)) {
    throw new SandboxError(
      'POLICY_VIOLATION',
      `user ${JSON.stringify(user)} with a writable mount: not allowed (with a writable mount the user must be a numeric uid:gid, since the image decides what a name or a lone uid means).`,
      {
        data: { rule: 'noRootWithWritableMounts' },
      },
    );
  }
  if (user === undefined) {
    const { uid, gid } = hostUser;
    if (uid !== undefined && gid !== undefined) user = `${uid}:${gid}`;
    if (uid === 0) {
      const owners = new Set(writable.map((m) => ownerOf(m.hostPath)));
      const [owner] = owners;
      if (owners.size === 1 && owner && !owner.startsWith('0:')) user = owner;
    }
  }
  // Compared as numbers: "00" and "000:0" are uid 0 to the engine; gid 0 is root's group.
  const ids = user?.split(':').map(Number);
  const root = ids === undefined || ids.some((n) => n === 0);
  if (root && !c.allowRootWithWritableMounts) {
    // Root's own folders (this process is root and so is every owner): no other user may write them.
    const rootOwned = c.user === undefined && hostUser.uid === 0 && writable.every((m) => ownerOf(m.hostPath)?.startsWith('0:'));
    throw new SandboxError(
      'POLICY_VIOLATION',
      `A writable mount with the container running as root (uid or gid 0): not allowed (${INVARIANTS.noRootWithWritableMounts}). ` +
        (rootOwned
          ? `The folder is root's (${writable.map((m) => m.hostPath).join(', ')}), so no other user can write it: give it to a non-root user (chown -R 1000:1000 <folder>), mount it read-only, or set allowRootWithWritableMounts: true if root-owned files in that folder are acceptable.`
          : 'Set user to a non-root uid:gid that may write the folder (e.g. "1000:1000"), mount it read-only, or set allowRootWithWritableMounts: true if root-owned files in that folder are acceptable.'),
      { data: { rule: 'noRootWithWritableMounts' } },
    );
  }
  return user;
}

function ownerOf(path: string): string | undefined {
  try {
    const st = statSync(path);
    return `${st.uid}:${st.gid}`;
  } catch (e) {
    swallowed(`owner of ${path}`, e);
    return undefined;
  }
}
