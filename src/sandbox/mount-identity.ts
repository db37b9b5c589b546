import { readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { SandboxError } from '../errors.js';
import { isWithin } from '../paths.js';
import { INVARIANTS } from '../policy/policy.js';
import type { Sandbox } from './sandbox.js';
import { swallowed } from '../debug.js';

/**
 * Which host folder a bind mount really is. The policy checks a mount's real path, but the
 * engine resolves the path again when it mounts it: whoever can write in a folder above it
 * can swap a component for a link in between (to /var/run, say). So once the container
 * runs, its mount table must show, at each target, the device and the folder that were
 * checked; both sides read /proc/self/mountinfo (device major:minor, and the mount's root
 * within that device's filesystem).
 */

interface MountEntry {
  device: string;
  root: string;
  mountPoint: string;
}

/** mountinfo escapes space, tab, newline and backslash as octal (\040 ...). */
function unescape(field: string): string {
  return field.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8)));
}

function parseMountinfo(text: string): MountEntry[] {
  const entries: MountEntry[] = [];
  for (const line of text.split('\n')) {
    const f = line.split(' ');
    if (f.length < 5 || !f[2] || !f[3] || !f[4]) continue;
    entries.push({ device: f[2], root: unescape(f[3]), mountPoint: unescape(f[4]) });
  }
  return entries;
}

/**
 * The device and filesystem root of a host path, from this process's mount table: the
 * last-mounted entry whose mount point holds it. Undefined when the table cannot be read.
 */
export function hostIdentity(realPath: string, mountinfo?: string): { device: string; root: string } | undefined {
  let text = mountinfo;
  if (text === undefined) {
    try {
      text = readFileSync('/proc/self/mountinfo', 'utf8');
    } catch (e) {
      swallowed("reading this process's mount table", e);
      return undefined;
    }
  }
  const holding = parseMountinfo(text).filter((e) => isWithin(realPath, e.mountPoint));
  let best: MountEntry | undefined;
  for (const e of holding) if (!best || e.mountPoint.length >= best.mountPoint.length) best = e;
  if (!best) return undefined;
  return { device: best.device, root: join(best.root, relative(best.mountPoint, realPath)) };
}

/**
 * The binds whose target in the container is not the host folder expected, each with what
 * was found there. `containerMountinfo` is the container's /proc/self/mountinfo.
 */
export function mountMismatches(
  expected: ReadonlyArray<{ containerPath: string; hostPath: string; identity: { device: string; root: string } }>,
  containerMountinfo: string,
): string[] {
  const entries = parseMountinfo(containerMountinfo);
  const problems: string[] = [];
  for (const m of expected) {
    // The last entry at a mount point is the one on top.
    const at = entries.filter((e) => e.mountPoint === m.containerPath).pop();
    if (!at) problems.push(`${m.containerPath}: no mount there`);
    else if (at.device !== m.identity.device || at.root !== m.identity.root) {
      problems.push(
        `${m.containerPath}: expected ${m.hostPath} (device ${m.identity.device}, ${m.identity.root}), found device ${at.device}, ${at.root}`,
      );
    }
  }
  return problems;
}

/**
 * The mounts the container got are the folders that were checked (mount-identity.ts):
 * a folder swapped for a link between the check and the engine's mount is caught here.
 * Checked where the engine is local (a unix socket: same machine, same paths).
 * @throws SandboxError POLICY_VIOLATION naming each mount that is not what was checked.
 */
export async function verifyMounts(
  sandbox: Sandbox,
  expected: Array<{ hostPath: string; containerPath: string; identity: { device: string; root: string } | undefined }>,
): Promise<void> {
  const known = expected.filter((m): m is typeof m & { identity: { device: string; root: string } } => m.identity !== undefined);
  if (known.length === 0) return;
  const problems = mountMismatches(known, await sandbox.mountTable());
  if (problems.length) {
    throw new SandboxError(
      'POLICY_VIOLATION',
      `The container's mounts are not the folders that were checked (${problems.join('; ')}): not allowed (${INVARIANTS.mountAllowlist}). Something changed a path while the container was created.`,
      {
        data: { rule: 'mountAllowlist' },
      },
    );
  }
}
