/** Temporary folders and a configuration rooted in one, for every tier of tests. */
import { mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Config, type ConfigInput } from '../../src/config/config-schema.js';
import { loadConfig } from '../../src/config/load-config.js';

const dirs: string[] = [];

/** A fresh temporary folder (its real path), removed by `removeTempDirs`. */
export function tempDir(prefix = 'gcd-'): string {
  const d = realpathSync(mkdtempSync(join(tmpdir(), prefix)));
  dirs.push(d);
  return d;
}

/** Removes every folder `tempDir` made in this test file. */
export function removeTempDirs(): void {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
}

/**
 * A resolved configuration rooted in a fresh temporary folder, with no environment: logs
 * go to its `logs` folder (not the user's state folder), unless `overrides` say otherwise.
 */
export function testConfig(overrides: ConfigInput = {}): Config {
  const root = tempDir('gcd-project-');
  return loadConfig({ cwd: root, env: {}, overrides: { ...overrides, logs: { dir: join(root, 'logs'), ...(overrides.logs ?? {}) } } });
}
