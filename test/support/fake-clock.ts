import type { Clock } from '../../src/retry.js';

/**
 * A clock that moves only when a wait asks it to: no real time passes. Each sleep lets the
 * event loop turn once (as a real timer would), so work the wait waits for can progress;
 * `onSleep` runs before it, with the pauses so far.
 */
export interface FakeClock extends Clock {
  readonly slept: number[];
  onSleep?: (slept: readonly number[]) => void;
}

export function fakeClock(): FakeClock {
  let t = 0;
  const clock: FakeClock = {
    slept: [],
    now: () => t,
    sleep: async (ms) => {
      clock.slept.push(ms);
      t += ms;
      clock.onSleep?.(clock.slept);
      await new Promise((r) => setImmediate(r));
    },
  };
  return clock;
}
