/**
 * No leaked container however the owning process ends: child processes start a sandbox
 * through the built package (dist/) and then end by a signal, normally, by an uncaught
 * error, or by process.exit(); a SIGKILLed owner's container is left for the start-up
 * sweep, which removes it and never touches a live process's container.
 */
import { spawn, type ChildProcessByStdio } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { hostname } from 'node:os';
import { DockerEngine, LABEL, sweepContainers } from '../../src/index.js';
import { processStart } from '../../src/sandbox/labels.js';
import {
  dockerOk,
  expectNoContainersLeft,
  MINIMAL_IMAGE,
  fileSession,
  inspectContainer,
  makeTempDir,
  newTestSessionId,
  removeTestDirs,
  requireEngine,
  waitFor,
} from '../support/engine.js';

fileSession('exit-hook');

const HERE = dirname(fileURLToPath(import.meta.url));
const FIXTURE = join(HERE, 'fixtures', 'exit-hook-child.mjs');
const ROOT = join(HERE, '..', '..');
const DIST_INDEX = join(ROOT, 'dist', 'index.js');

function newestMtime(dir: string): number {
  let newest = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    newest = Math.max(newest, e.isDirectory() ? newestMtime(p) : statSync(p).mtimeMs);
  }
  return newest;
}

beforeAll(async () => {
  await requireEngine();
  if (!existsSync(DIST_INDEX)) {
    throw new Error(`${DIST_INDEX} is missing: the exit-hook fixtures run the built package. Run \`npm run build\` first.`);
  }
  if (newestMtime(join(ROOT, 'src')) > statSync(DIST_INDEX).mtimeMs) {
    console.warn('dist/ is older than src/: the exit-hook tests run the built package; run `npm run build` to test the current sources.');
  }
});
afterAll(async () => {
  removeTestDirs();
  await expectNoContainersLeft();
});

interface Child {
  proc: ChildProcessByStdio<null, Readable, Readable>;
  id: string;
  pid: number;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  stderr: () => string;
}

const children: Child[] = [];
afterAll(() => {
  for (const c of children) if (c.proc.exitCode === null && c.proc.signalCode === null) c.proc.kill('SIGKILL');
});

/** Starts the fixture and waits for the id of its container. */
async function startChild(mode: 'wait' | 'end' | 'throw' | 'reject' | 'exit'): Promise<Child> {
  const proc = spawn(process.execPath, [FIXTURE, mode, newTestSessionId(), makeTempDir()], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, NODE_OPTIONS: '' },
  });
  let out = '';
  let err = '';
  proc.stderr.on('data', (d: Buffer) => (err += d.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    proc.once('exit', (code, signal) => resolve({ code, signal })),
  );
  const line = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`fixture (${mode}) printed no id within 30 s; stderr: ${err}`)), 30_000);
    proc.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      const nl = out.indexOf('\n');
      if (nl !== -1) {
        clearTimeout(timer);
        resolve(out.slice(0, nl));
      }
    });
    void exited.then(({ code, signal }) => {
      clearTimeout(timer);
      if (!out.includes('\n')) reject(new Error(`fixture (${mode}) ended (code ${code}, signal ${signal}) before printing an id; stderr: ${err}`));
    });
  });
  const { id, pid } = JSON.parse(line) as { id: string; pid: number };
  const child: Child = { proc, id, pid, exited, stderr: () => err };
  children.push(child);
  expect(pid).toBe(proc.pid);
  expect((await inspectContainer(id))?.State.Running).toBe(true);
  return child;
}

async function expectGoneSoon(id: string): Promise<void> {
  await waitFor(`container ${id.slice(0, 12)} to be removed`, async () => ((await inspectContainer(id)) ? undefined : true), 5000, 100);
}

describe.each(['SIGTERM', 'SIGINT', 'SIGHUP'] as const)('killed with %s', (signal) => {
  test.concurrent('its container is removed and the child dies by that signal', async () => {
    const child = await startChild('wait');
    child.proc.kill(signal);
    const ended = await child.exited;
    expect(ended).toEqual({ code: null, signal });
    await expectGoneSoon(child.id);
  }, 60_000);
});

test.concurrent('a child that ends normally with a container still running leaves none', async () => {
  const child = await startChild('end');
  const ended = await child.exited;
  expect(ended).toEqual({ code: 0, signal: null });
  expect(await inspectContainer(child.id)).toBeUndefined();
}, 60_000);

test.concurrent('a child that throws an uncaught exception leaves none', async () => {
  const child = await startChild('throw');
  const ended = await child.exited;
  expect(ended.code).toBe(1);
  expect(child.stderr()).toContain('boom from the exit-hook fixture');
  expect(await inspectContainer(child.id)).toBeUndefined();
}, 60_000);

test.concurrent('a child with an unhandled promise rejection leaves none', async () => {
  const child = await startChild('reject');
  const ended = await child.exited;
  expect(ended.code).toBe(1);
  expect(child.stderr()).toContain('unhandled rejection from the exit-hook fixture');
  expect(await inspectContainer(child.id)).toBeUndefined();
}, 60_000);

test.concurrent('a child that calls process.exit(3) leaves none and keeps its exit code', async () => {
  const child = await startChild('exit');
  expect(await child.exited).toEqual({ code: 3, signal: null });
  expect(await inspectContainer(child.id)).toBeUndefined();
}, 60_000);

// The sweeps run after every test above has finished (these two are not concurrent), so a
// sweep cannot hide a container that an exit hook above failed to remove.
test('killed with SIGKILL: its container stays, then a sweep removes it because its owner is gone', async () => {
  const child = await startChild('wait');
  child.proc.kill('SIGKILL');
  expect(await child.exited).toEqual({ code: null, signal: 'SIGKILL' });
  // Nothing could run in the child: the container is still there.
  await new Promise((r) => setTimeout(r, 500));
  expect((await inspectContainer(child.id))?.State.Running).toBe(true);

  const report = await sweepContainers(new DockerEngine());
  expect(report.failed).toEqual([]);
  expect(report.removed).toEqual(expect.arrayContaining([expect.objectContaining({ id: child.id, why: 'owner-gone' })]));
  expect(await inspectContainer(child.id)).toBeUndefined();
}, 60_000);

test('a sweep never removes the container of another live process', async () => {
  const child = await startChild('wait');
  const report = await sweepContainers(new DockerEngine());
  expect(report.removed.map((r) => r.id)).not.toContain(child.id);
  expect(report.kept).toEqual(expect.arrayContaining([expect.objectContaining({ id: child.id, why: 'owner alive' })]));
  expect((await inspectContainer(child.id))?.State.Running).toBe(true);
  // A dry run with all: true would list it, but removes nothing.
  const dry = await sweepContainers(new DockerEngine(), { all: true, dryRun: true });
  expect(dry.removed.map((r) => r.id)).toContain(child.id);
  expect((await inspectContainer(child.id))?.State.Running).toBe(true);

  child.proc.kill('SIGTERM');
  expect(await child.exited).toEqual({ code: null, signal: 'SIGTERM' });
  await expectGoneSoon(child.id);
}, 60_000);

test("a container whose owner's pid now belongs to another process is swept; the real owner's is kept", async () => {
  // A live process stands in for the pid: the one with its real start time is its owner;
  // the one with an earlier start time was made by a process that had the same pid before.
  const live = spawn('sleep', ['60'], { stdio: 'ignore' });
  const start = processStart(live.pid!)!;
  expect(start).toMatch(/:\d+$/);
  const [bootId, ticks] = start.split(':');
  const run = (ownerStart: string) =>
    dockerOk([
      'run', '-d', '--rm',
      '--label', `${LABEL.managed}=true`,
      '--label', `${LABEL.session}=${newTestSessionId()}`,
      '--label', `${LABEL.owner}=${hostname()}:${live.pid}`,
      '--label', `${LABEL.ownerStart}=${ownerStart}`,
      '--label', `${LABEL.expiresAt}=${new Date(Date.now() + 600_000).toISOString()}`,
      MINIMAL_IMAGE, 'sleep', '600',
    ]).then((out) => out.trim());
  const owned = await run(start);
  const reused = await run(`${bootId}:${Number(ticks) - 1}`);
  try {
    const report = await sweepContainers(new DockerEngine());
    expect(report.failed).toEqual([]);
    expect(report.removed).toEqual(expect.arrayContaining([expect.objectContaining({ id: reused, why: 'owner-gone' })]));
    expect(report.removed.map((r) => r.id)).not.toContain(owned);
    expect(report.kept).toEqual(expect.arrayContaining([expect.objectContaining({ id: owned, why: 'owner alive' })]));
    expect(await inspectContainer(reused)).toBeUndefined();
    expect((await inspectContainer(owned))?.State.Running).toBe(true);
  } finally {
    live.kill();
    await dockerOk(['rm', '-f', owned, reused]).catch(() => undefined);
  }
}, 60_000);

