/** Shared set-up for unit tests: the temporary folders and configuration of every tier, and error capture. */
import { SandboxError } from '../../src/errors.js';
import type { ExecResult } from '../../src/sandbox/exec-types.js';

export { removeTempDirs, tempDir, testConfig } from '../support/temp-dirs.js';

/** Runs `fn` and returns the SandboxError it throws (fails the test if it throws anything else, or nothing). */
export async function sandboxError(fn: () => unknown): Promise<SandboxError> {
  try {
    await fn();
  } catch (e) {
    if (e instanceof SandboxError) return e;
    throw new Error(`expected a SandboxError, got ${String(e)}`);
  }
  throw new Error('expected a SandboxError, but nothing was thrown');
}

export function syncSandboxError(fn: () => unknown): SandboxError {
  try {
    fn();
  } catch (e) {
    if (e instanceof SandboxError) return e;
    throw new Error(`expected a SandboxError, got ${String(e)}`);
  }
  throw new Error('expected a SandboxError, but nothing was thrown');
}

/** An ExecResult as sandbox.exec makes one: a successful empty command, with `over` on top. */
export function execResultOf(over: Partial<ExecResult> = {}): ExecResult {
  return {
    command: 'true',
    exitCode: 0,
    stdout: '',
    stderr: '',
    truncated: false,
    timedOut: false,
    canceled: false,
    oomKilled: false,
    pidsLimitHit: false,
    diskLimitHit: false,
    bytes: { stdout: 0, stderr: 0 },
    lines: { stdout: 0, stderr: 0 },
    durationMs: 5,
    logPath: '/nonexistent/0001-true.log',
    ...over,
  };
}
