/** Shared set-up for unit tests: the temporary folders and configuration of every tier, and error capture. */
import { SandboxError } from '../../src/errors.js';

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
