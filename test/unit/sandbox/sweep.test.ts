import { jest } from '@jest/globals';
import { hostname } from 'node:os';
import { SandboxError } from '../../../src/errors.js';
import { containerLabels, LABEL, type Owner } from '../../../src/sandbox/labels.js';
import { EXPIRY_GRACE_MS, sweepContainers, type SweepOptions } from '../../../src/sandbox/sweep.js';
import { FakeEngine } from '../../support/fake-engine.js';

const NOW = new Date('2026-03-01T12:00:00.000Z');
const SELF: Owner = { host: 'here', pid: 100 };
const ALIVE = new Set([100, 200]);
const HOUR = 3600_000;

function seed(engine: FakeEngine, name: string, owner: Owner, expiresInMs: number) {
  const labels = containerLabels('sess', owner, new Date(NOW.getTime() - HOUR), new Date(NOW.getTime() + expiresInMs));
  return engine.seedContainer({ name, labels });
}

function options(extra: SweepOptions = {}): SweepOptions {
  return { now: NOW, self: SELF, isAlive: (pid) => ALIVE.has(pid), startOf: () => undefined, ...extra };
}

function names(list: Array<{ name: string }>): string[] {
  return list.map((x) => x.name).sort();
}

describe('sweepContainers', () => {
  let engine: FakeEngine;
  beforeEach(() => {
    engine = new FakeEngine();
    seed(engine, 'dead-owner', { host: 'here', pid: 300 }, HOUR);
    seed(engine, 'live-owner', { host: 'here', pid: 200 }, HOUR);
    seed(engine, 'mine', SELF, HOUR);
    seed(engine, 'expired-live-owner', { host: 'here', pid: 200 }, -EXPIRY_GRACE_MS - 1000);
    seed(engine, 'other-host', { host: 'elsewhere', pid: 300 }, HOUR);
    seed(engine, 'other-host-expired', { host: 'elsewhere', pid: 300 }, -EXPIRY_GRACE_MS);
    engine.seedContainer({ name: 'not-managed', labels: { 'com.example': 'x' } });
  });

  test('removes dead owners and expired containers; keeps live owners, this process and other hosts', async () => {
    const report = await sweepContainers(engine, options());
    expect(names(report.removed)).toEqual(['dead-owner', 'expired-live-owner', 'other-host-expired']);
    expect(Object.fromEntries(report.removed.map((r) => [r.name, r.why]))).toEqual({
      'dead-owner': 'owner-gone',
      'expired-live-owner': 'expired',
      'other-host-expired': 'expired',
    });
    expect(Object.fromEntries(report.kept.map((k) => [k.name, k.why]))).toEqual({
      'live-owner': 'owner alive',
      mine: 'this process',
      'other-host': 'owner on another host',
    });
    expect(report.failed).toEqual([]);
    expect([...engine.containers.values()].map((c) => c.name).sort()).toEqual(['live-owner', 'mine', 'not-managed', 'other-host']);
    // Only managed containers are listed, and removal is forced.
    expect(engine.callsOf('listContainers')).toEqual([[{ [LABEL.managed]: 'true' }]]);
    expect(engine.callsOf('removeContainer').every(([, force]) => force)).toBe(true);
  });

  test('a removal the engine never answers (a container it holds locked) is reported, and the sweep goes on', async () => {
    const remove = engine.removeContainer.bind(engine);
    const wedged = [...engine.containers.values()].find((c) => c.name === 'dead-owner')!.id;
    engine.removeContainer = (id, force) => (id === wedged ? new Promise<boolean>(() => undefined) : remove(id, force));
    // A clock whose bound is up after one turn of the event loop (the fake's other removals
    // settle within it): no real time passes.
    const clock = { now: () => 0, sleep: () => new Promise<void>((r) => setImmediate(r)) };
    let settled = false;
    const sweep = sweepContainers(engine, options({ clock })).then((r) => ((settled = true), r));
    const report = await sweep;
    expect(settled).toBe(true);
    expect(report.failed).toEqual([{ id: wedged, error: expect.stringMatching(/did not remove it within 20 s .*ends at its expiry/) }]);
    expect(names(report.removed)).toEqual(['expired-live-owner', 'other-host-expired']);
  });

  test('expired is removed even when its owner is alive', async () => {
    const report = await sweepContainers(engine, options());
    expect(report.removed.find((r) => r.name === 'expired-live-owner')?.why).toBe('expired');
    expect(report.removed.find((r) => r.name === 'expired-live-owner')?.expiresAt).toBe(
      new Date(NOW.getTime() - EXPIRY_GRACE_MS - 1000).toISOString(),
    );
  });

  test('a container just past its expiry is left to end by itself while its owner lives', async () => {
    const fresh = new FakeEngine();
    seed(fresh, 'just-expired', { host: 'here', pid: 200 }, -(EXPIRY_GRACE_MS - 1000));
    seed(fresh, 'just-expired-dead-owner', { host: 'here', pid: 300 }, -1000);
    seed(fresh, 'just-expired-other-host', { host: 'elsewhere', pid: 300 }, -1);
    const report = await sweepContainers(fresh, options());
    expect(report.removed.map((r) => [r.name, r.why])).toEqual([['just-expired-dead-owner', 'owner-gone']]);
    expect(Object.fromEntries(report.kept.map((k) => [k.name, k.why]))).toEqual({
      'just-expired': 'expired, ending by itself',
      'just-expired-other-host': 'expired, ending by itself',
    });
  });

  test('a managed container with neither owner nor expiry label is removed; with an expiry only, kept', async () => {
    engine.seedContainer({ name: 'unlabelled', labels: { [LABEL.managed]: 'true' } });
    engine.seedContainer({
      name: 'expiry-only',
      labels: { [LABEL.managed]: 'true', [LABEL.expiresAt]: new Date(NOW.getTime() + HOUR).toISOString() },
    });
    const report = await sweepContainers(engine, options());
    expect(report.removed.find((r) => r.name === 'unlabelled')?.why).toBe('unlabelled-owner');
    // With an expiry but no owner: left to its expiry.
    expect(report.kept.find((k) => k.name === 'expiry-only')?.why).toBe('no owner label; its expiry will end it');
  });

  test('all: removes everything managed but keep', async () => {
    const mine = [...engine.containers.values()].find((c) => c.name === 'mine');
    const report = await sweepContainers(engine, options({ all: true, keep: new Set([mine!.id]) }));
    expect(names(report.removed)).toEqual(['dead-owner', 'expired-live-owner', 'live-owner', 'other-host', 'other-host-expired']);
    expect(report.removed.every((r) => r.why === 'all')).toBe(true);
    expect(names(report.kept)).toEqual(['mine']);
    expect([...engine.containers.values()].map((c) => c.name).sort()).toEqual(['mine', 'not-managed']);
  });

  test('dryRun reports but removes nothing', async () => {
    const before = engine.containers.size;
    const report = await sweepContainers(engine, options({ dryRun: true, all: true }));
    expect(report.removed).toHaveLength(6);
    expect(engine.containers.size).toBe(before);
    expect(engine.callsOf('removeContainer')).toEqual([]);
  });

  test('a failing remove is reported in failed, the others still go', async () => {
    const dead = [...engine.containers.values()].find((c) => c.name === 'dead-owner')!;
    engine.fail('removeContainer', new SandboxError('ENGINE_ERROR', 'Remove container: device busy'), { when: (id) => id === dead.id });
    const report = await sweepContainers(engine, options());
    expect(report.failed).toEqual([{ id: dead.id, error: 'Remove container: device busy' }]);
    expect(names(report.removed)).toEqual(['expired-live-owner', 'other-host-expired']);
    expect(engine.containers.has(dead.id)).toBe(true);
  });

  test('a failing list rejects (the caller decides)', async () => {
    engine.fail('listContainers', new SandboxError('ENGINE_UNAVAILABLE', 'no engine'));
    await expect(sweepContainers(engine, options())).rejects.toMatchObject({ code: 'ENGINE_UNAVAILABLE' });
  });
});

describe('sweepContainers: a reused pid is not the owner', () => {
  const BOOT = 'b0e1d2c3-0000-4000-8000-000000000000';
  const self: Owner = { host: 'here', pid: 100, start: `${BOOT}:5000` };
  // pid 200 is alive and started at tick 9000; pid 100 is this process.
  const startOf = (pid: number) => (pid === 200 ? `${BOOT}:9000` : pid === 100 ? self.start : undefined);

  test('the owner pid alive with the recorded start: kept; with another start or boot: removed', async () => {
    const engine = new FakeEngine();
    seed(engine, 'same-process', { host: 'here', pid: 200, start: `${BOOT}:9000` }, HOUR);
    seed(engine, 'pid-reused', { host: 'here', pid: 200, start: `${BOOT}:1234` }, HOUR);
    seed(engine, 'before-reboot', { host: 'here', pid: 200, start: 'another-boot:9000' }, HOUR);
    seed(engine, 'no-start-label', { host: 'here', pid: 200 }, HOUR);
    const report = await sweepContainers(engine, options({ self, startOf }));
    expect(Object.fromEntries(report.removed.map((r) => [r.name, r.why]))).toEqual({
      'pid-reused': 'owner-gone',
      'before-reboot': 'owner-gone',
    });
    expect(names(report.kept)).toEqual(['no-start-label', 'same-process']);
  });

  test("an earlier process that had this process's pid is not this process", async () => {
    const engine = new FakeEngine();
    seed(engine, 'mine', self, HOUR);
    seed(engine, 'earlier-me', { host: 'here', pid: 100, start: `${BOOT}:42` }, HOUR);
    const report = await sweepContainers(engine, options({ self, startOf }));
    expect(report.removed.map((r) => [r.name, r.why])).toEqual([['earlier-me', 'owner-gone']]);
    expect(report.kept).toEqual([expect.objectContaining({ name: 'mine', why: 'this process' })]);
  });

  test('where the system cannot tell a start, a live pid keeps its containers', async () => {
    const engine = new FakeEngine();
    seed(engine, 'pid-reused', { host: 'here', pid: 200, start: `${BOOT}:1234` }, HOUR);
    const report = await sweepContainers(engine, options({ self, startOf: () => undefined }));
    expect(report.removed).toEqual([]);
  });
});

describe('the periodic sweep (SandboxManager.sweepEvery)', () => {
  test('sweeps at each interval, never keeps the process alive, and a failed sweep is retried at the next tick', async () => {
    const { SandboxManager } = await import('../../../src/sandbox/sandbox-manager.js');
    const { testConfig } = await import('../helpers.js');
    const engine = new FakeEngine();
    const orphan = seed(engine, 'orphan', { host: hostname(), pid: 999_999_999 }, HOUR);
    const manager = new SandboxManager({ config: testConfig(), engine, sweepOnStart: false });
    engine.fail('listContainers', new SandboxError('ENGINE_UNAVAILABLE', 'down'), { times: 1 });
    const timers: NodeJS.Timeout[] = [];
    const realSetInterval = globalThis.setInterval;
    const spy = jest.spyOn(globalThis, 'setInterval').mockImplementation(((fn: () => void, ms: number) => {
      const t = realSetInterval(fn, ms);
      timers.push(t);
      return t;
    }) as typeof setInterval);
    try {
      manager.sweepEvery(20);
      expect(timers).toHaveLength(1);
      expect(timers[0]?.hasRef()).toBe(false);
      const deadline = Date.now() + 2000;
      while (engine.callsOf('listContainers').length < 3 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
      expect(engine.callsOf('listContainers').length).toBeGreaterThanOrEqual(3);
      expect(engine.callsOf('removeContainer').map(([id]) => id)).toContain(orphan.id);
    } finally {
      spy.mockRestore();
      for (const t of timers) clearInterval(t);
      await manager[Symbol.asyncDispose]();
    }
  });
});
