import type { ContainerEngine, ContainerState } from '../../../src/engine/container-engine.js';
import { containerGoneError, isGone, isGoneError, lookGone } from '../../../src/engine/container-gone.js';
import { SandboxError } from '../../../src/errors.js';
import { fakeClock } from '../../support/fake-clock.js';

function state(running: boolean, status = running ? 'running' : 'exited'): ContainerState {
  return { id: 'c'.repeat(64), name: 'box', running, status, oomKilled: false, exitCode: running ? null : 137, labels: {} };
}

/** An engine whose inspect answers from a list, one answer a call (the last one repeated); an Error is thrown. */
function inspecting(answers: Array<ContainerState | undefined | Error>): Pick<ContainerEngine, 'inspectContainer'> & { looks: number } {
  const engine = {
    looks: 0,
    inspectContainer: (): Promise<ContainerState | undefined> => {
      const a = answers[Math.min(engine.looks++, answers.length - 1)];
      return a instanceof Error ? Promise.reject(a) : Promise.resolve(a);
    },
  };
  return engine;
}

describe('isGone: the one rule', () => {
  test.each([
    ['no such container', undefined, true],
    ['exited', state(false), true],
    ['being removed', state(false, 'removing'), true],
    ['created, never started', state(false, 'created'), true],
    ['running', state(true), false],
    ['paused (still running to the engine)', state(true, 'paused'), false],
    ['the engine could not be asked', null, false],
  ])('%s', (_what, seen, gone) => {
    expect(isGone(seen)).toBe(gone);
  });
});

describe('lookGone', () => {
  test('one look without a settle time', async () => {
    const clock = fakeClock();
    const engine = inspecting([state(true), state(false)]);
    expect(await lookGone(engine, 'c1', { clock })).toEqual({ gone: false, state: state(true) });
    expect(engine.looks).toBe(1);
    expect(clock.slept).toEqual([]);
  });

  test('a kill the engine is still carrying out: looked at again until it shows', async () => {
    const clock = fakeClock();
    const engine = inspecting([state(true), state(true), state(false)]);
    expect(await lookGone(engine, 'c1', { settleMs: 300, intervalMs: 50, clock })).toEqual({ gone: true, state: state(false) });
    expect(clock.slept).toEqual([50, 50]);
  });

  test('still running at the end of the settle time: not gone, and no look after it', async () => {
    const clock = fakeClock();
    const engine = inspecting([state(true)]);
    expect((await lookGone(engine, 'c1', { settleMs: 300, intervalMs: 50, clock })).gone).toBe(false);
    expect(clock.slept.reduce((a, b) => a + b, 0)).toBe(300);
    expect(engine.looks).toBe(7);
  });

  test('an inspect that fails is "could not say": not gone, and asked again', async () => {
    const clock = fakeClock();
    const engine = inspecting([new Error('engine down'), undefined]);
    expect(await lookGone(engine, 'c1', { settleMs: 1_000, intervalMs: 100, clock })).toEqual({ gone: true, state: undefined });
    expect(clock.slept).toEqual([100]);
    expect((await lookGone(inspecting([new Error('engine down')]), 'c1', { clock })).gone).toBe(false);
  });
});

describe('containerGoneError: one shape, whatever the reason', () => {
  test('named, with the reason, what to do, and the data the code documents', () => {
    const e = containerGoneError({ id: 'a'.repeat(64), name: 'box-1' }, 'it stopped during the write', { logPath: '/logs/1.log' });
    expect(e).toBeInstanceOf(SandboxError);
    expect(e.code).toBe('CONTAINER_NOT_FOUND');
    expect(e.message).toBe('Container box-1 is no longer running: it stopped during the write. Start a new one.');
    expect(e.data).toEqual({ containerId: 'a'.repeat(64), logPath: '/logs/1.log' });
    expect(isGoneError(e)).toBe(true);
  });

  test('without a name: the short id; without a log: no logPath', () => {
    const e = containerGoneError({ id: '0123456789abcdef' }, 'no such container', { cause: new Error('404') });
    expect(e.message).toBe('Container 0123456789ab is no longer running: no such container. Start a new one.');
    expect(e.data).toEqual({ containerId: '0123456789abcdef' });
    expect(e.cause).toEqual(new Error('404'));
  });

  test('isGoneError: only CONTAINER_NOT_FOUND', () => {
    expect(isGoneError(new SandboxError('ENGINE_UNAVAILABLE', 'down'))).toBe(false);
    expect(isGoneError(new Error('CONTAINER_NOT_FOUND'))).toBe(false);
  });
});
