import { UNBOUNDED } from './bounded-engine.js';
import type { ContainerEngine } from './container-engine.js';

/**
 * An engine as the key of what the process learns or shares about it (its pulls in flight,
 * how it enforces the disk limit): its address where it has one, so that every manager of
 * the process talking to the same engine shares it; else the engine object itself.
 */
export function engineKey(engine: ContainerEngine): object | string {
  const base = (engine as ContainerEngine & { [UNBOUNDED]?: ContainerEngine })[UNBOUNDED] ?? engine;
  return base.connection?.endpoint ?? base;
}
