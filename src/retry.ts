/**
 * Waiting, in one place: every poll loop and pause of src/ goes through here, on a clock a
 * unit test can replace (so a test of a 10-second wait takes no 10 seconds).
 */

/** Time as the waits see it. */
export interface Clock {
  now(): number;
  sleep(ms: number): Promise<void>;
}

/**
 * The real clock. Its timer is not unref'd: a pause inside an operation someone awaits must
 * keep the process alive (genaicode awaits its handlers at the top level; an unref'd timer
 * that is all that is left lets it exit with the operation unfinished, exit code 13).
 */
export const systemClock: Clock = {
  now: () => Date.now(),
  sleep: (ms) => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms))),
};

export function delay(ms: number, clock: Clock = systemClock): Promise<void> {
  return clock.sleep(ms);
}

export interface PollOptions {
  /** How long to keep trying; the probe runs at least once, and once more at the deadline. */
  timeoutMs: number;
  /** Pause between tries: a number, or one per attempt (0-based) for a back-off. */
  intervalMs: number | ((attempt: number) => number);
  /** At most this many tries, whatever the time left. */
  maxAttempts?: number;
  clock?: Clock;
}

/**
 * Calls `probe` until it returns something other than `undefined`, or the time (or the
 * number of tries) is up. Resolves with what the probe returned, or `undefined` when it never
 * answered; an error the probe throws ends the wait and rejects with it.
 */
export async function poll<T>(
  probe: (attempt: number) => Promise<T | undefined> | T | undefined,
  options: PollOptions,
): Promise<T | undefined> {
  const clock = options.clock ?? systemClock;
  const deadline = clock.now() + options.timeoutMs;
  for (let attempt = 0; ; attempt++) {
    const answer = await probe(attempt);
    if (answer !== undefined) return answer;
    if (options.maxAttempts !== undefined && attempt + 1 >= options.maxAttempts) return undefined;
    const left = deadline - clock.now();
    if (left <= 0) return undefined;
    const pause = typeof options.intervalMs === 'number' ? options.intervalMs : options.intervalMs(attempt);
    await clock.sleep(Math.min(pause, left));
  }
}

/**
 * `work`, or `undefined` once `ms` have passed without it settling (the work itself goes on;
 * its late error is dropped). For engine calls that a wedged container can hold for good. On
 * the real clock the timer is cleared as soon as the work settles: a bound never keeps the
 * process alive.
 */
export async function within<T>(work: Promise<T>, ms: number, clock: Clock = systemClock): Promise<{ value: T } | undefined> {
  const done = work.then((value) => ({ value }));
  done.catch(() => undefined); // a rejection after the bound is dropped, never unhandled
  let timer: NodeJS.Timeout | undefined;
  const expired =
    clock === systemClock
      ? new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), ms)))
      : clock.sleep(ms).then(() => undefined);
  try {
    return await Promise.race([done, expired]);
  } finally {
    clearTimeout(timer);
  }
}
