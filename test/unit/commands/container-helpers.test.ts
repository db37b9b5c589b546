import { ContainerHelpers } from '../../../src/commands/container-helpers.js';
import { containerGoneError } from '../../../src/engine/container-gone.js';
import { SandboxError } from '../../../src/errors.js';
import { fakeClock } from '../../support/fake-clock.js';
import { FakeEngine, out } from '../../support/fake-engine.js';

/** A running container whose kill helper answers each try from `answers` (the last one repeated). */
function killAnswering(answers: Array<{ stdout: string; exitCode: number }>): { engine: FakeEngine; id: string } {
  let tries = 0;
  const engine = new FakeEngine({
    helperScript: (_id, _spec, kind) => {
      if (kind !== 'kill-tree') return undefined;
      const a = answers[Math.min(tries++, answers.length - 1)]!;
      return { frames: [out(a.stdout)], exitCode: a.exitCode };
    },
  });
  return { engine, id: engine.seedContainer({}).id };
}

describe('ContainerHelpers.killTree: retries on the clock', () => {
  test('a helper the process limit refuses is tried again, after a growing pause', async () => {
    const clock = fakeClock();
    const { engine, id } = killAnswering([
      { stdout: 'fork refused\n', exitCode: 2 },
      { stdout: 'fork refused\n', exitCode: 2 },
      { stdout: 'gone 4\n', exitCode: 0 },
    ]);
    expect(await new ContainerHelpers(engine, id, clock).killTree('MARK=1:1')).toBe('gone 4');
    expect(engine.execsOf('kill-tree')).toHaveLength(3);
    expect(clock.slept).toEqual([100, 150]);
  });

  test('bounded in time: after 5 s of refusals it answers with what survived', async () => {
    const clock = fakeClock();
    const { engine, id } = killAnswering([{ stdout: 'left 2: 17 18\n', exitCode: 1 }]);
    expect(await new ContainerHelpers(engine, id, clock).killTree('MARK=1:1')).toBe('left 2: 17 18');
    // 100, 150, ... until the 5 s are up; the last pause is cut to the time left, then one more try.
    expect(clock.slept).toEqual([100, 150, 200, 250, 300, 350, 400, 450, 500, 550, 600, 650, 500]);
    expect(clock.now()).toBe(5_000);
    expect(engine.execsOf('kill-tree')).toHaveLength(14);
  });

  test('bounded in tries: at most 20, whatever the time', async () => {
    const clock = fakeClock();
    const { engine, id } = killAnswering([{ stdout: '', exitCode: 1 }]);
    // A clock that barely moves: only the bound on tries ends the retries.
    const slow = { ...clock, sleep: (ms: number) => clock.sleep(ms / 1000) };
    expect(await new ContainerHelpers(engine, id, slow).killTree('MARK=1:1')).toBe('exit 1');
    expect(engine.execsOf('kill-tree')).toHaveLength(20);
  });

  test.each([
    ['removed', containerGoneError({ id: 'c1' }, 'it was stopped, removed or reached its expiry')],
    ['stopped (the engine refuses the exec)', containerGoneError({ id: 'c1' }, 'the engine says: container is not running')],
  ])('the container %s: no retry, the tree went with it', async (_what, gone) => {
    const clock = fakeClock();
    const { engine, id } = killAnswering([{ stdout: '', exitCode: 1 }]);
    engine.fail('exec', gone);
    expect(await new ContainerHelpers(engine, id, clock).killTree('MARK=1:1')).toBe('container gone');
    expect(clock.slept).toEqual([]);
  });

  test('an engine error is retried', async () => {
    const clock = fakeClock();
    const { engine, id } = killAnswering([{ stdout: 'gone 1\n', exitCode: 0 }]);
    engine.fail('exec', new SandboxError('ENGINE_ERROR', 'engine hiccup'), { times: 2 });
    expect(await new ContainerHelpers(engine, id, clock).killTree('MARK=1:1')).toBe('gone 1');
    expect(clock.slept).toEqual([100, 150]);
  });
});

describe('ContainerHelpers.readLimitCounters: a failed read is tried again', () => {
  /** A container whose counter helper answers each try from `answers` (the last one repeated). */
  function countersAnswering(answers: string[]): { engine: FakeEngine; id: string } {
    let tries = 0;
    const engine = new FakeEngine({
      helperScript: (_id, _spec, kind) =>
        kind === 'cgroup-counters' ? { frames: [out(answers[Math.min(tries++, answers.length - 1)]!)], exitCode: 0 } : undefined,
    });
    return { engine, id: engine.seedContainer({}).id };
  }

  test('an engine error, then the counters: the memory kill is reported', async () => {
    const clock = fakeClock();
    const { engine, id } = countersAnswering(['\x1e1:0\x1e']);
    engine.fail('exec', new SandboxError('ENGINE_ERROR', 'engine hiccup'), { times: 2 });
    expect(await new ContainerHelpers(engine, id, clock).readLimitCounters({ oomKills: 0, pidsRefused: 0 })).toEqual({
      oomKilled: true,
      pidsLimitHit: false,
    });
    expect(clock.slept).toEqual([150, 300]);
  });

  test('output with no counters, then the counters', async () => {
    const clock = fakeClock();
    const { engine, id } = countersAnswering(['', '\x1e3:2\x1e']);
    expect(await new ContainerHelpers(engine, id, clock).readLimitCounters({ oomKills: 3, pidsRefused: 1 })).toEqual({
      oomKilled: false,
      pidsLimitHit: true,
    });
    expect(engine.execsOf('cgroup-counters')).toHaveLength(2);
  });

  test('three failures: nothing is claimed, and no fourth try', async () => {
    const clock = fakeClock();
    const { engine, id } = countersAnswering(['\x1e1:0\x1e']);
    engine.fail('exec', new SandboxError('ENGINE_ERROR', 'engine hiccup'), { times: 5 });
    expect(await new ContainerHelpers(engine, id, clock).readLimitCounters()).toEqual({ oomKilled: false, pidsLimitHit: false });
    expect(clock.slept).toEqual([150, 300]);
  });

  test('the container gone: no retry', async () => {
    const clock = fakeClock();
    const { engine, id } = countersAnswering(['\x1e1:0\x1e']);
    engine.fail('exec', containerGoneError({ id: 'c1' }, 'removed'));
    expect(await new ContainerHelpers(engine, id, clock).readLimitCounters()).toEqual({ oomKilled: false, pidsLimitHit: false });
    expect(clock.slept).toEqual([]);
  });
});
