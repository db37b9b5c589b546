/**
 * The disk watch on its own, against a fake engine whose writable layer the test grows:
 * it acts between commands (the writer stopped once each time the limit is passed, the
 * notice kept for the next answer), kills a command only while the layer grows, and looks
 * sooner when the layer grows fast.
 */
import { DiskWatch } from '../../../src/commands/disk-watch.js';
import { FakeEngine } from '../../support/fake-engine.js';

const MiB = 1024 ** 2;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Resolves once `check` holds (looked at every 50 ms), or fails after `ms`. */
async function until(what: string, check: () => boolean, ms = 8000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`not within ${ms} ms: ${what}`);
    await sleep(50);
  }
}

/** A fake engine that notes when each look was made. */
class TimedEngine extends FakeEngine {
  readonly lookTimes: number[] = [];
  override async diskUsage(id: string): Promise<number | undefined> {
    this.lookTimes.push(performance.now());
    return super.diskUsage(id);
  }
}

/** A container on `engine` whose layer the test sets. */
async function containerOn(engine: FakeEngine): Promise<string> {
  return engine.createContainer({
    image: 'alpine:3.20',
    name: 'disk',
    labels: {},
    entrypoint: [],
    cmd: ['sleep', '60'],
    env: [],
    workdir: '/',
    memoryBytes: 64 * MiB,
    nanoCpus: 1e9,
    pidsLimit: 64,
    network: 'none',
    readOnlyRoot: false,
    tmpfs: [],
    binds: [],
    capAdd: [],
    autoRemove: true,
  });
}

async function setup(limitBytes = 100 * MiB) {
  const engine = new TimedEngine({ images: ['alpine:3.20'] });
  const id = await containerOn(engine);
  const container = engine.containers.get(id)!;
  const stops: number[] = [];
  const watch = new DiskWatch(engine, id, limitBytes, async () => {
    stops.push(container.diskBytes);
    return 'gone 2';
  });
  const looks = () => engine.callsOf('diskUsage').length;
  return { engine, container, watch, stops, looks };
}

test('between commands: the writer is stopped once when the layer passes the limit, and the next answer is told once', async () => {
  const { container, watch, stops, looks } = await setup();
  watch.start();
  try {
    container.diskBytes = 10 * MiB;
    await until('two looks', () => looks() >= 2);
    expect(stops).toEqual([]);
    container.diskBytes = 300 * MiB;
    await until('the writer stopped', () => stops.length === 1);
    expect(stops).toEqual([300 * MiB]);
    const seen = looks();
    await until('two more looks', () => looks() >= seen + 2, 15_000);
    expect(stops).toHaveLength(1);
    expect(watch.takeNotice()).toEqual({ usedBytes: 300 * MiB, killReport: 'gone 2' });
    expect(watch.takeNotice()).toBeUndefined();
    // Under the limit again, then over it again: stopped again.
    container.diskBytes = 50 * MiB;
    const under = looks();
    await until('a look under the limit', () => looks() > under, 10_000);
    container.diskBytes = 200 * MiB;
    await until('the writer stopped again', () => stops.length === 2);
    expect(stops).toEqual([300 * MiB, 200 * MiB]);
  } finally {
    watch.stop();
  }
}, 30_000);

test('while a command runs: killed while the layer grows past the limit, not while it shrinks (a clean-up)', async () => {
  const { container, watch, stops } = await setup();
  watch.start();
  try {
    container.diskBytes = 300 * MiB;
    await sleep(1300);
    expect(stops).toHaveLength(1);
    const hits: number[] = [];
    const end = watch.duringCommand((used) => hits.push(used));
    container.diskBytes = 250 * MiB; // an rm in progress
    await sleep(1300);
    expect(hits).toEqual([]);
    container.diskBytes = 400 * MiB; // writing again
    await sleep(1300);
    expect(hits).toEqual([400 * MiB]);
    end();
    expect(stops).toHaveLength(1); // a command's hit stops that command, not the leftovers
  } finally {
    watch.stop();
  }
}, 20_000);

test('a command that starts over the limit is not killed for bytes written before it (a stopped writer\u2019s last ones)', async () => {
  const { container, watch, stops, looks } = await setup();
  watch.start();
  try {
    container.diskBytes = 300 * MiB;
    await until('the writer stopped', () => stops.length === 1);
    const seen = looks();
    await until('a look after the stop', () => looks() > seen);
    // Its last bytes, written between the look and the kill: seen first by the next command's first look.
    container.diskBytes = 320 * MiB;
    const hits: number[] = [];
    const end = watch.duringCommand((used) => hits.push(used));
    const first = looks();
    await until('the command\u2019s first look', () => looks() > first);
    expect(hits).toEqual([]);
    container.diskBytes = 250 * MiB; // its rm
    const second = looks();
    await until('a look during the rm', () => looks() > second);
    expect(hits).toEqual([]);
    container.diskBytes = 400 * MiB; // then it writes: killed
    await until('the command killed', () => hits.length > 0);
    expect(hits).toEqual([400 * MiB]);
    end();
  } finally {
    watch.stop();
  }
}, 20_000);

test('a stopped writer\u2019s last bytes, seen by a later look between commands, are not told a second time', async () => {
  const engine = new TimedEngine({ images: ['alpine:3.20'] });
  const id = await containerOn(engine);
  const container = engine.containers.get(id)!;
  const reports = ['gone 2', 'gone 0'];
  const watch = new DiskWatch(engine, id, 100 * MiB, async () => reports.shift() ?? 'gone 0');
  const looks = () => engine.callsOf('diskUsage').length;
  watch.start();
  try {
    container.diskBytes = 300 * MiB;
    await until('the writer stopped', () => reports.length === 1);
    await until('the notice', () => watch.takeNotice() !== undefined);
    container.diskBytes = 320 * MiB; // written between the look and the kill
    await until('the second stop (nothing left)', () => reports.length === 0);
    const seen = looks();
    await until('a look after it', () => looks() > seen);
    expect(watch.takeNotice()).toBeUndefined();
  } finally {
    watch.stop();
  }
}, 20_000);

test('a layer growing fast is looked at sooner as it nears the limit; a still one about once a second, no more', async () => {
  const { engine, container, watch } = await setup(400 * MiB);
  watch.start();
  try {
    container.diskBytes = 1 * MiB;
    await until('a first look', () => engine.lookTimes.length >= 1);
    // 200 MiB/s: at a look a second the layer would pass the limit by up to 200 MiB.
    const from = engine.lookTimes.length;
    while (container.diskBytes < 390 * MiB) {
      container.diskBytes += 20 * MiB;
      await sleep(100);
    }
    const gaps = engine.lookTimes.slice(from).map((t, k, all) => (k ? t - all[k - 1]! : Infinity));
    expect(Math.min(...gaps)).toBeLessThan(600);
    // Still: a look about every second (a daemon left running may start writing at any
    // moment), and not the fast pace of a growing layer.
    const still = engine.lookTimes.length;
    await sleep(8000);
    const looked = engine.lookTimes.length - still;
    expect(looked).toBeGreaterThanOrEqual(5);
    expect(looked).toBeLessThanOrEqual(9);
  } finally {
    watch.stop();
  }
}, 30_000);

test("commands that follow one another closely cost one look each: a command's end is a look, and postpones the next", async () => {
  const { watch, looks } = await setup();
  watch.start();
  try {
    const before = looks();
    let measured = 0;
    for (let i = 0; i < 15; i++) {
      const end = watch.duringCommand(() => undefined);
      await sleep(150);
      end();
      await watch.measure();
      measured++;
    }
    expect(looks() - before).toBe(measured);
  } finally {
    watch.stop();
  }
}, 20_000);

describe('slow looks', () => {
  /** An engine whose every look takes `ms` (a loaded machine, a layer of many files). */
  class SlowEngine extends TimedEngine {
    constructor(private readonly ms: number) {
      super({ images: ['alpine:3.20'] });
    }
    override async diskUsage(id: string): Promise<number | undefined> {
      await sleep(this.ms);
      return super.diskUsage(id);
    }
  }

  async function slowWatch(fill: number) {
    const engine = new SlowEngine(600);
    const id = await containerOn(engine);
    engine.containers.get(id)!.diskBytes = fill;
    const watch = new DiskWatch(engine, id, 100 * MiB, async () => 'gone 0');
    watch.start();
    await sleep(8000);
    watch.stop();
    return engine.lookTimes.length;
  }

  test("far from the limit they are spaced out (a tenth of the engine's time); past half of it they are not", async () => {
    const [far, near] = await Promise.all([slowWatch(10 * MiB), slowWatch(60 * MiB)]);
    // Far: a 600 ms look is followed by 6 s of rest (1 or 2 looks in 8 s); near: a look every 1-2 s (4 or so).
    expect(far).toBeLessThanOrEqual(2);
    expect(near).toBeGreaterThanOrEqual(3);
  }, 20_000);
});
