import type { ContainerEngine } from './container-engine.js';
import { containerGoneError, UNANSWERED_MS, UNANSWERED_REASON } from './container-gone.js';
import { within } from '../retry.js';

/**
 * The calls about one container that a wedged container can hold for good: a process in it
 * that stops every other (`kill -STOP -1`) freezes the runtime's own process that sets up an
 * exec, and the engine then holds its lock on the container for as long as the freeze lasts
 * (its keep-alive is frozen too, so it never ends by itself): inspect, exec, stop and removal all
 * wait. Each is bounded; past the bound the call is CONTAINER_NOT_FOUND with `unanswered` in its
 * data. An exec is bounded until it starts, not while its command runs.
 */
const PER_CONTAINER = ['inspectContainer', 'diskUsage', 'stopContainer', 'removeContainer', 'exec', 'statPath', 'extractArchive'] as const;

/** The engine a bounded one wraps: what the process learns about an engine is keyed on it (engine-key.ts). */
export const UNBOUNDED = Symbol('the engine a bounded one wraps');

/** `engine`, with every call about one container bounded in time (UNANSWERED_MS). */
export function boundedEngine(engine: ContainerEngine, boundMs = UNANSWERED_MS): ContainerEngine {
  return new Proxy(engine, {
    get(target, key, receiver) {
      if (key === UNBOUNDED) return target;
      const value: unknown = Reflect.get(target, key, receiver);
      if (typeof value !== 'function') return value;
      const method = (value as (...args: unknown[]) => unknown).bind(target);
      if (!(PER_CONTAINER as readonly (string | symbol)[]).includes(key)) return method;
      return async (...args: unknown[]) => {
        const answered = await within(method(...args) as Promise<unknown>, boundMs);
        if (!answered) {
          throw containerGoneError({ id: String(args[0]) }, UNANSWERED_REASON, { unanswered: true });
        }
        return answered.value;
      };
    },
  });
}
