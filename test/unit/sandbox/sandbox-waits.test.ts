import { DEFAULT_IMAGE } from '../../../src/config/config-schema.js';
import type { Sandbox } from '../../../src/sandbox/sandbox.js';
import { SandboxManager } from '../../../src/sandbox/sandbox-manager.js';
import { fakeClock, type FakeClock } from '../../support/fake-clock.js';
import { FakeEngine, out, type ScriptedExec } from '../../support/fake-engine.js';
import { removeTempDirs, sandboxError, testConfig } from '../helpers.js';

const managers: SandboxManager[] = [];

/** A sandbox whose waits are on a fake clock; every command answers with `result`. */
async function setup(result: ScriptedExec): Promise<{ engine: FakeEngine; sandbox: Sandbox; clock: FakeClock }> {
  const clock = fakeClock();
  const engine = new FakeEngine({ images: [DEFAULT_IMAGE], script: () => ({ ...result, frames: [...result.frames] }) });
  const manager = new SandboxManager({ config: testConfig(), engine, sessionId: '20260101-000000-abcdef', sweepOnStart: false, clock });
  managers.push(manager);
  const sandbox = await manager.start();
  return { engine, sandbox, clock };
}

afterEach(async () => {
  for (const m of managers.splice(0)) await m[Symbol.asyncDispose]();
  removeTempDirs();
});

describe('Sandbox.whenIdle on the clock', () => {
  test('idle: at once, no pause', async () => {
    const { sandbox, clock } = await setup({ frames: [], exitCode: 0 });
    await sandbox.whenIdle(10_000);
    expect(clock.slept).toEqual([]);
  });

  test('a command that does not end: the whole wait passes on the clock, and the command still runs', async () => {
    const { engine, sandbox, clock } = await setup({ frames: [out('working\n')], exitCode: null, hangUntilKilled: true });
    const controller = new AbortController();
    const running = sandbox.exec('sleep 1000', { signal: controller.signal, timeoutMs: 600_000 });
    await engine.waitFor((e) => (e.execsOf('command')[0]?.delivered ?? 0) >= 1);
    await sandbox.whenIdle(10_000);
    expect(clock.now()).toBe(10_000);
    expect(new Set(clock.slept)).toEqual(new Set([50]));
    expect(engine.execsOf('command')[0]?.state).toBe('running');
    controller.abort();
    expect((await running).canceled).toBe(true);
  });

  test('a command canceled during the wait: idle once its tree is killed, long before the wait is up', async () => {
    const { engine, sandbox, clock } = await setup({ frames: [out('working\n')], exitCode: null, hangUntilKilled: true });
    const controller = new AbortController();
    const running = sandbox.exec('sleep 1000', { signal: controller.signal, timeoutMs: 600_000 });
    await engine.waitFor((e) => (e.execsOf('command')[0]?.delivered ?? 0) >= 1);
    clock.onSleep = (slept) => {
      if (slept.length === 2) controller.abort();
    };
    await sandbox.whenIdle(10_000);
    expect(engine.execsOf('command')[0]?.state).toBe('killed');
    expect(engine.execsOf('kill-tree')).toHaveLength(1);
    expect(clock.now()).toBeLessThan(10_000);
    expect((await running).canceled).toBe(true);
  });
});

describe("a command ended by a signal we did not send: the container's state, looked at on the clock", () => {
  // null: a kept shell killed from outside under the command gives it no exit code of its own.
  test.each([137, 143, null])(
    'exit %p while the engine still shows the container running: looked at again, found stopped',
    async (code) => {
      const { engine, sandbox, clock } = await setup({ frames: [out('partial\n')], exitCode: code });
      clock.onSleep = (slept) => {
        if (slept.length === 2) void engine.stopContainer(sandbox.id, 0);
      };
      const r = await sandbox.exec('make');
      expect(clock.slept).toEqual([50, 50]);
      expect(r.reason).toMatch(/^the container (stopped|was removed) while the command ran/);
      const next = await sandboxError(() => sandbox.exec('true'));
      expect(next.code).toBe('CONTAINER_NOT_FOUND');
      expect(next.message).toMatch(
        new RegExp(`^Container ${sandbox.name} is no longer running: the container .* while the command ran.*\\. Start a new one\\.$`),
      );
    },
  );

  test('exit 137 and the container still runs after 300 ms of the clock: the command was killed, the container is fine', async () => {
    const { sandbox, clock } = await setup({ frames: [], exitCode: 137 });
    const r = await sandbox.exec('make');
    expect(clock.slept.reduce((a, b) => a + b, 0)).toBe(300);
    expect(r).toMatchObject({ exitCode: 137 });
    expect(r.reason).toBeUndefined();
    expect((await sandbox.exec('true')).exitCode).toBe(137);
  });

  test.each([139, 255])('exit %p: one look, no second (only a kill from outside is slow to show)', async (code) => {
    const { engine, sandbox, clock } = await setup({ frames: [], exitCode: code });
    engine.clearCalls();
    const r = await sandbox.exec('./crash');
    expect(engine.callsOf('inspectContainer')).toHaveLength(1);
    expect(clock.slept).toEqual([]);
    expect(r.reason).toBeUndefined();
  });
});
