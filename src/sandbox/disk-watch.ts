import { swallowed } from '../debug.js';
import type { ContainerEngine } from '../engine/container-engine.js';

/** How often a command's writes are measured where the engine has no disk quota. */
const DISK_CHECK_MS = 1000;

/**
 * Measures a container's writable layer (the engine's SizeRw) every second while a command
 * runs, where the storage driver has no quota, and calls `onOver` once it passes the limit.
 * Returns the function that stops measuring.
 */
export function watchDisk(
  engine: ContainerEngine,
  containerId: string,
  limitBytes: number,
  onOver: (usedBytes: number) => void,
): () => void {
  let measuring = false;
  let over = false;
  const timer = setInterval(() => {
    if (measuring || over) return;
    measuring = true;
    engine
      .diskUsage(containerId)
      .then((used) => {
        if (used !== undefined && used > limitBytes) {
          over = true;
          onOver(used);
        }
      })
      .catch((e: unknown) => swallowed('measuring the writable layer', e))
      .finally(() => (measuring = false));
  }, DISK_CHECK_MS);
  return () => clearInterval(timer);
}
