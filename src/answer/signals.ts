import { constants } from 'node:os';
import type { ExecResult } from '../commands/exec-types.js';

/** What the common deadly signals mean, for a developer reading an exit code. */
const MEANING: Record<string, string> = {
  SIGSEGV: 'segmentation fault: an invalid memory access',
  SIGABRT: 'aborted: a failed assert(), abort() or an uncaught C++ exception',
  SIGBUS: 'bus error: a misaligned or unmapped memory access',
  SIGFPE: 'arithmetic error, such as an integer division by zero',
  SIGILL: 'illegal instruction',
  SIGKILL: 'killed (SIGKILL)',
  SIGTERM: 'terminated (SIGTERM)',
  SIGINT: 'interrupted (SIGINT)',
  SIGPIPE: 'wrote to a closed pipe',
  SIGTRAP: 'trace or breakpoint trap',
  SIGXCPU: 'CPU time limit exceeded',
  SIGXFSZ: 'file size limit exceeded',
};

/** Number to name; the first name of a number wins (SIGABRT, not its alias SIGIOT). */
/**
 * The signal that ended a command, when its exit code is the only word on it: a timeout, a
 * cancel, a limit or a reason already say why (a killed tree exits 137 = SIGKILL too).
 */
export function killedBySignal(
  r: Pick<ExecResult, 'exitCode' | 'timedOut' | 'canceled' | 'oomKilled' | 'diskLimitHit' | 'reason'>,
): { name: string; meaning: string } | undefined {
  return r.timedOut || r.canceled || r.oomKilled || r.diskLimitHit || r.reason ? undefined : signalOfExit(r.exitCode);
}

/** The `signal` field of an answer: "SIGSEGV (segmentation fault: ...)", or undefined. */
export function signalField(r: Parameters<typeof killedBySignal>[0]): { signal: string } | Record<string, never> {
  const s = killedBySignal(r);
  return s ? { signal: `${s.name} (${s.meaning})` } : {};
}

const BY_NUMBER = new Map<number, string>();
for (const [name, n] of Object.entries(constants.signals)) if (!BY_NUMBER.has(n)) BY_NUMBER.set(n, name);

/**
 * The signal a shell's exit code of 128 + N names (139: SIGSEGV), or undefined. A command
 * may also exit with such a code by itself; the answer says "exit 139 (SIGSEGV ...)", as a
 * shell would.
 */
export function signalOfExit(exitCode: number): { name: string; meaning: string } | undefined {
  if (exitCode <= 128 || exitCode > 128 + 64) return undefined;
  const name = BY_NUMBER.get(exitCode - 128);
  if (!name) return undefined;
  return { name, meaning: MEANING[name] ?? name };
}
