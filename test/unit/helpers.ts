/** Shared set-up for unit tests: the temporary folders and configuration of every tier, and error capture. */
import type { ExecResult } from '../../src/commands/exec-types.js';

import type { Config, ConfigInput } from '../../src/config/config-schema.js';
import { testConfig as supportConfig } from '../support/temp-dirs.js';

export { removeTempDirs, tempDir } from '../support/temp-dirs.js';

/**
 * A configuration for unit tests: the fake engine runs one exec per command, so the kept
 * shell is off unless a test turns it on (its own tests run it in a real engine).
 */
export function testConfig(overrides: ConfigInput = {}): Config {
  return supportConfig({ ...overrides, exec: { keptShell: false, ...(overrides.exec ?? {}) } });
}
export { sandboxError, syncSandboxError } from '../support/sandbox-error.js';

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
