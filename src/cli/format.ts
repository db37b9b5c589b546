import { displayText } from '../display-text.js';
import { isSandboxError } from '../errors.js';
import type { ExecResult } from '../commands/exec-types.js';

/** One result as a person reads it at a terminal. */
export function formatExecResult(r: ExecResult): string {
  const flags = [
    r.timedOut && 'timed out',
    r.canceled && 'canceled',
    r.oomKilled && 'OOM-killed',
    r.diskLimitHit && 'disk limit hit',
    r.pidsLimitHit && 'process limit hit',
    r.truncated && 'output truncated',
  ].filter(Boolean);
  const lines = [`$ ${r.command}`];
  if (r.stdout) lines.push(r.stdout.replace(/\n$/, ''));
  if (r.stderr) lines.push(`[stderr]\n${r.stderr.replace(/\n$/, '')}`);
  lines.push(
    `-> exit ${r.exitCode} in ${r.durationMs} ms; ${r.bytes.stdout} + ${r.bytes.stderr} bytes (stdout + stderr)` +
      (flags.length ? `; ${flags.join(', ')}` : ''),
  );
  if (r.reason) lines.push(`   ${r.reason}`);
  lines.push(`   full log: ${r.logPath}`);
  return lines.join('\n');
}

export function formatBytes(n: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let v = n;
  let u = 0;
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  return `${Number.isInteger(v) ? v : v.toFixed(1)} ${units[u]}`;
}

/** Exit code of `run` and `task` when the sandbox could not run (as `docker run` uses it). */
export const SANDBOX_FAILED_EXIT_CODE = 125;

/** A failure of `run` or `task`: the structured error on stdout with --json, else a sentence on stderr. */
export function reportFailure(e: unknown, json: boolean, out: (line: string) => void, err: (line: string) => void): number {
  if (json && isSandboxError(e)) out(JSON.stringify(e.toJSON()));
  // The message may quote the engine or a model: one line, control characters named.
  else err(displayText(isSandboxError(e) ? `${e.code}: ${e.message}` : String(e), 4000));
  return SANDBOX_FAILED_EXIT_CODE;
}
