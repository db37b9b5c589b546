import type { ContainerEngine, ContainerSpec } from '../engine/container-engine.js';
import { engineKey } from '../engine/engine-key.js';
import { SandboxError } from '../errors.js';
import { swallowed } from '../debug.js';

/**
 * How each engine enforces the disk limit, learned at the first create (an engine's storage
 * driver has quotas for StorageOpt size, or not): learned once per process, per engine.
 */
const diskQuotas = new Map<object | string, 'engine' | 'measured'>();

/** How the disk limit is enforced on `engine` ('unknown' before a first create). */
export function diskEnforcement(engine: ContainerEngine): 'engine' | 'measured' | 'unknown' {
  return diskQuotas.get(engineKey(engine)) ?? 'unknown';
}

/**
 * Whether a storage driver can enforce StorageOpt size: overlay2 on xfs (with pquota, which
 * only trying tells), btrfs, zfs, devicemapper, Windows'; not overlay2 on ext4 or vfs. An
 * engine that does not say is tried.
 */
function quotaPossible(storage: { driver: string; backingFilesystem?: string } | undefined): boolean {
  if (!storage) return true;
  if (['btrfs', 'zfs', 'devicemapper', 'windowsfilter'].includes(storage.driver)) return true;
  return storage.driver === 'overlay2' && /xfs/i.test(storage.backingFilesystem ?? '');
}

/** Creates the container with the engine's disk quota where it has one; else without, measured instead. */
export async function createWithDiskLimit(engine: ContainerEngine, spec: ContainerSpec, diskBytes: number): Promise<string> {
  const key = engineKey(engine);
  // Tried only where the storage driver can have quotas: elsewhere the engine would create
  // the container and destroy it again, which anyone watching its events would see.
  if (!diskQuotas.has(key) && !quotaPossible((await engine.info()).storage)) diskQuotas.set(key, 'measured');
  if (diskQuotas.get(key) !== 'measured') {
    try {
      const id = await engine.createContainer({ ...spec, diskBytes });
      diskQuotas.set(key, 'engine');
      return id;
    } catch (e) {
      if (!(e instanceof SandboxError && e.data.noDiskQuota)) throw e;
      swallowed('no disk quota on this storage driver: the disk limit is measured', e);
      diskQuotas.set(key, 'measured');
    }
  }
  // Measured: one file, however fast it is written, stops at the limit (the watch covers many files).
  return engine.createContainer({ ...spec, fileSizeLimitBytes: diskBytes });
}
