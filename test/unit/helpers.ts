/** Shared set-up for unit tests: temporary folders and a configuration that touches nothing real. */
import { mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../../src/config/load-config.js';
import { type Config, type ConfigInput } from '../../src/config/config-schema.js';
import { SandboxError } from '../../src/errors.js';

const dirs: string[] = [];

/** A fresh temporary folder (real path), removed by `removeTempDirs`. */
export function tempDir(prefix = 'gcd-unit-'): string {
  const d = realpathSync(mkdtempSync(join(tmpdir(), prefix)));
  dirs.push(d);
  return d;
}

export function removeTempDirs(): void {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
}

/** A resolved configuration rooted in a temporary folder, with no environment. */
export function testConfig(overrides: ConfigInput = {}): Config {
  const root = tempDir('gcd-project-');
  return loadConfig({ cwd: root, env: {}, overrides: { ...overrides, logs: { dir: join(root, 'logs'), ...(overrides.logs ?? {}) } } });
}

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
