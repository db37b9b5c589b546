/**
 * The start-up sweep on the real engine: a SIGKILLed owner's container is left behind,
 * and the next sweep removes it because its owner is gone; a live process's container is
 * never removed; a pid now used by another process is not taken for the owner; and
 * `genaicode-docker cleanup` does the same by hand.
 *
 * These tests set up containers whose owner is gone on purpose, so any other sweep on
 * this engine would remove them too: a CLI or genaicode child of another test file sweeps
 * when it starts. `npm test` therefore runs this file alone, after all the others
 * (scripts/jest.sh); run it alone by hand too. Its tests run one after another.
 */
import { spawn, spawnSync } from 'node:child_process';
import { hostname } from 'node:os';
import { DockerEngine, LABEL, sweepContainers } from '../../../src/index.js';
import { processStart } from '../../../src/sandbox/labels.js';
import {
  dockerOk,
  expectNoContainersLeft,
  fileSession,
  inspectContainer,
  MINIMAL_IMAGE,
  newTestSessionId,
  requireEngine,
} from '../../support/engine.js';
import { tempDir, removeTempDirs } from '../../support/temp-dirs.js';
import { CLI, requireBuiltPackage } from '../../support/built-package.js';
import { expectGoneSoon, killChildren, startChild } from '../../support/exit-hook-child.js';

fileSession('sweep');

beforeAll(async () => {
  await requireEngine();
  requireBuiltPackage();
  requireBuiltPackage(CLI);
});
afterAll(async () => {
  killChildren();
  removeTempDirs();
  await expectNoContainersLeft();
});

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
      'run',
      '-d',
      '--rm',
      '--label',
      `${LABEL.managed}=true`,
      '--label',
      `${LABEL.session}=${newTestSessionId()}`,
      '--label',
      `${LABEL.owner}=${hostname()}:${live.pid}`,
      '--label',
      `${LABEL.ownerStart}=${ownerStart}`,
      '--label',
      `${LABEL.expiresAt}=${new Date(Date.now() + 600_000).toISOString()}`,
      MINIMAL_IMAGE,
      'sleep',
      '600',
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

test("genaicode-docker cleanup: --dry-run lists a dead owner's container and keeps it; cleanup removes it; a live one is kept", async () => {
  const dead = await startChild('wait');
  const live = await startChild('wait');
  dead.proc.kill('SIGKILL');
  expect(await dead.exited).toEqual({ code: null, signal: 'SIGKILL' });
  const short = (id: string) => id.slice(0, 12);

  const dry = runCleanup(['--dry-run']);
  expect(dry.status).toBe(0);
  // First, which engine it sweeps.
  expect(dry.stdout.split('\n')[0]).toMatch(/^engine (docker|podman) \S+ at unix:\/\/\S+$/);
  expect(dry.stdout).toMatch(new RegExp(`^would remove \\S+ \\(${short(dead.id)}\\): owner-gone, owner ${hostname()}:${dead.pid}$`, 'm'));
  expect(dry.stdout).toMatch(new RegExp(`^kept \\S+ \\(${short(live.id)}\\): owner alive, owner ${hostname()}:${live.pid}$`, 'm'));
  expect((await inspectContainer(dead.id))?.State.Running).toBe(true);

  const real = runCleanup([]);
  expect(real.status).toBe(0);
  expect(real.stdout).toMatch(new RegExp(`^removed \\S+ \\(${short(dead.id)}\\): owner-gone`, 'm'));
  expect(real.stdout).toMatch(/^\d+ removed, \d+ kept, 0 failed$/m);
  expect(await inspectContainer(dead.id)).toBeUndefined();
  expect((await inspectContainer(live.id))?.State.Running).toBe(true);

  // --all with --dry-run would take the live one too, but removes nothing.
  const all = runCleanup(['--all', '--dry-run']);
  expect(all.status).toBe(0);
  expect(all.stdout).toMatch(new RegExp(`^would remove \\S+ \\(${short(live.id)}\\): all`, 'm'));
  expect((await inspectContainer(live.id))?.State.Running).toBe(true);

  live.proc.kill('SIGTERM');
  expect(await live.exited).toEqual({ code: null, signal: 'SIGTERM' });
  await expectGoneSoon(live.id);
}, 60_000);

test('cleanup: labels any engine user can set cannot forge a line or send escapes to the terminal', async () => {
  const forged = `${hostname()}:1\n0 would remove, 0 kept, 0 failed\u001b[2J`;
  const id = (
    await dockerOk([
      'run',
      '-d',
      '--label',
      `${LABEL.managed}=true`,
      '--label',
      `${LABEL.owner}=${forged}`,
      '--label',
      `${LABEL.session}=forged\u202Ex`,
      MINIMAL_IMAGE,
      'sleep',
      '60',
    ])
  ).trim();
  try {
    const dry = runCleanup(['--dry-run']);
    expect(dry.status).toBe(0);
    expect(dry.stdout).not.toContain('\u001b');
    // The forged text is on the container's own line, its line break shown as \n.
    const line = dry.stdout.split('\n').find((l) => l.includes(id.slice(0, 12)));
    expect(line).toContain('\\n0 would remove, 0 kept, 0 failed\\x1b[2J');
    expect(dry.stdout.split('\n').filter((l) => /^\d+ would remove, \d+ kept, \d+ failed$/.test(l))).toHaveLength(1);
  } finally {
    await dockerOk(['rm', '-f', id]).catch(() => undefined);
  }
}, 60_000);

function runCleanup(args: string[]): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [CLI, 'cleanup', ...args], { cwd: tempDir(), encoding: 'utf8', timeout: 60_000 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}
