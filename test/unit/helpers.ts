/** Shared set-up for unit tests: the temporary folders and configuration of every tier, and error capture. */
import type { ExecResult } from '../../src/commands/exec-types.js';

export { removeTempDirs, tempDir, testConfig } from '../support/temp-dirs.js';
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
