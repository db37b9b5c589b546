import { poll, within, type Clock } from '../../src/retry.js';

/** A clock that moves only when a wait asks it to: no real time passes. */
function fakeClock(): Clock & { slept: number[] } {
  let t = 0;
  const slept: number[] = [];
  return {
    slept,
    now: () => t,
    sleep: async (ms) => {
      slept.push(ms);
      t += ms;
    },
  };
}

describe('poll', () => {
  test('resolves with the first answer, after the pauses before it', async () => {
    const clock = fakeClock();
    const answer = await poll((attempt) => (attempt === 3 ? 'ready' : undefined), { timeoutMs: 10_000, intervalMs: 50, clock });
    expect(answer).toBe('ready');
    expect(clock.slept).toEqual([50, 50, 50]);
  });

  test('gives up at the deadline, with a last pause cut to the time left', async () => {
    const clock = fakeClock();
    let tries = 0;
    const answer = await poll(() => void tries++, { timeoutMs: 120, intervalMs: 50, clock });
    expect(answer).toBeUndefined();
    expect(clock.slept).toEqual([50, 50, 20]);
    expect(tries).toBe(4);
  });

  test('a back-off per attempt, and a bound on tries whatever the time', async () => {
    const clock = fakeClock();
    const answer = await poll(() => undefined, { timeoutMs: 1e9, intervalMs: (a) => 100 + a * 50, maxAttempts: 4, clock });
    expect(answer).toBeUndefined();
    expect(clock.slept).toEqual([100, 150, 200]);
  });

  test('an error from the probe ends the wait', async () => {
    const clock = fakeClock();
    await expect(
      poll(
        (a) => {
          if (a === 1) throw new Error('engine gone');
          return undefined;
        },
        { timeoutMs: 1000, intervalMs: 10, clock },
      ),
    ).rejects.toThrow('engine gone');
  });

  test('false and 0 are answers; only undefined means "not yet"', async () => {
    expect(await poll(() => false, { timeoutMs: 0, intervalMs: 1, clock: fakeClock() })).toBe(false);
    expect(await poll(() => 0, { timeoutMs: 0, intervalMs: 1, clock: fakeClock() })).toBe(0);
  });
});

describe('within', () => {
  const turn = { now: () => 0, sleep: () => new Promise<void>((r) => setImmediate(r)) };

  test('the work, when it settles in time', async () => {
    expect(await within(Promise.resolve(7), 1000, turn)).toEqual({ value: 7 });
    await expect(within(Promise.reject(new Error('refused')), 1000, turn)).rejects.toThrow('refused');
  });

  test('undefined for work that never settles; a late rejection is dropped, never unhandled', async () => {
    expect(await within(new Promise(() => undefined), 1000, turn)).toBeUndefined();
    let fail: (e: Error) => void = () => undefined;
    const late = new Promise((_, reject) => (fail = reject));
    expect(await within(late, 1000, turn)).toBeUndefined();
    fail(new Error('too late'));
    await new Promise((r) => setImmediate(r));
  });
});
