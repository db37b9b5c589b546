/** Capturing the SandboxError a call throws, for every tier of tests. */
import { SandboxError } from '../../src/errors.js';

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
