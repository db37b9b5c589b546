/**
 * No leaked container however the owning process ends: child processes start a sandbox
 * through the built package (dist/) and then end by a signal, normally, by an uncaught
 * error, or by process.exit(); their exit hook removes the container every time. (A
 * SIGKILLed owner cannot run its hook: test/integration/sandbox/sweep.test.ts covers that case.)
 */
import { expectNoContainersLeft, fileSession, inspectContainer, requireEngine } from '../../support/engine.js';
import { removeTempDirs } from '../../support/temp-dirs.js';
import { requireBuiltPackage } from '../../support/built-package.js';
import { expectGoneSoon, killChildren, startChild } from '../../support/exit-hook-child.js';

fileSession('exit-hook');

beforeAll(async () => {
  await requireEngine();
  requireBuiltPackage();
});
afterAll(async () => {
  killChildren();
  removeTempDirs();
  await expectNoContainersLeft();
});

describe.each(['SIGTERM', 'SIGINT', 'SIGHUP'] as const)('killed with %s', (signal) => {
  test.concurrent(
    'its container is removed and the child dies by that signal',
    async () => {
      const child = await startChild('wait');
      child.proc.kill(signal);
      const ended = await child.exited;
      expect(ended).toEqual({ code: null, signal });
      await expectGoneSoon(child.id);
    },
    60_000,
  );
});

test.concurrent(
  'a child that ends normally with a container still running leaves none',
  async () => {
    const child = await startChild('end');
    const ended = await child.exited;
    expect(ended).toEqual({ code: 0, signal: null });
    expect(await inspectContainer(child.id)).toBeUndefined();
  },
  60_000,
);

test.concurrent(
  'a child that throws an uncaught exception leaves none',
  async () => {
    const child = await startChild('throw');
    const ended = await child.exited;
    expect(ended.code).toBe(1);
    expect(child.stderr()).toContain('boom from the exit-hook fixture');
    expect(await inspectContainer(child.id)).toBeUndefined();
  },
  60_000,
);

test.concurrent(
  'a child with an unhandled promise rejection leaves none',
  async () => {
    const child = await startChild('reject');
    const ended = await child.exited;
    expect(ended.code).toBe(1);
    expect(child.stderr()).toContain('unhandled rejection from the exit-hook fixture');
    expect(await inspectContainer(child.id)).toBeUndefined();
  },
  60_000,
);

test.concurrent(
  'a child that calls process.exit(3) leaves none and keeps its exit code',
  async () => {
    const child = await startChild('exit');
    expect(await child.exited).toEqual({ code: 3, signal: null });
    expect(await inspectContainer(child.id)).toBeUndefined();
  },
  60_000,
);
