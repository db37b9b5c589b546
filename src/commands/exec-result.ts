import type { CommandCapture } from './command-capture.js';
import type { CommandEnding } from './command-end.js';
import type { ContainerHelpers } from './container-helpers.js';
import type { DiskNotice } from './disk-watch.js';
import { explainResult } from './exec-reason.js';
import type { ExecResult } from './exec-types.js';
import type { Counters } from './wrapper-protocol.js';

export const TIMEOUT_EXIT_CODE = 124;
export const CANCELED_EXIT_CODE = 137;

/** Whether the command hit the memory or the process limit, from the counters before and after it. */
export async function limitsHit(
  helpers: ContainerHelpers,
  before: Counters | undefined,
  after: Counters | undefined,
  ending: CommandEnding,
): Promise<{ oomKilled: boolean; pidsLimitHit: boolean }> {
  if (before && after && after.oomKills === before.oomKills && after.pidsRefused === before.pidsRefused) {
    // The wrapper read the counters before and after, and nothing changed: no extra exec.
    return { oomKilled: false, pidsLimitHit: false };
  }
  // A trailer that claims a hit, a trailer that is missing or one the command may have
  // written itself (undefined here, see WrapperStderr.sawMark): one helper exec reads the
  // counters, which only the engine's cgroup can raise.
  if (after || ending.interrupted || (ending.exitCode !== null && ending.exitCode !== 0) || before) {
    return helpers.readLimitCounters(before);
  }
  return { oomKilled: false, pidsLimitHit: false };
}

/** A command's result from what was captured and how it ended, with its reason. */
export function execResult(
  info: { memoryBytes: number; pidsLimit: number },
  diskLimitBytes: number,
  command: string,
  capture: CommandCapture,
  ending: CommandEnding,
  limits: { oomKilled: boolean; pidsLimitHit: boolean },
  o: { lost?: string; diskNotice?: DiskNotice; timeoutMs: number; overlapped: boolean; durationMs: number },
): ExecResult {
  const timedOut = ending.interrupted === 'timeout';
  const canceled = ending.interrupted === 'cancel';
  const diskKilled = ending.interrupted === 'disk';
  const diskLimitHit = diskKilled || ending.diskUsed !== undefined || o.diskNotice !== undefined;
  const reason = explainResult(info, diskLimitBytes, {
    timedOut,
    canceled,
    ...(o.diskNotice ? { diskBetween: o.diskNotice } : {}),
    ...(diskLimitHit ? { diskUsed: ending.diskUsed ?? 0, diskKilled } : {}),
    ...limits,
    overlapped: o.overlapped,
    timeoutMs: o.timeoutMs,
    ...(ending.killReport ? { killReport: ending.killReport } : {}),
    ...(capture.log.error ? { logError: capture.log.error } : {}),
    ...(o.lost ? { lost: o.lost } : {}),
  });
  const stdout = capture.stdout.render(capture.logPath);
  const stderr = capture.stderr.render(capture.logPath);
  return {
    command,
    exitCode: timedOut
      ? TIMEOUT_EXIT_CODE
      : canceled || diskKilled
        ? CANCELED_EXIT_CODE
        : (ending.exitCode ?? (o.lost ? CANCELED_EXIT_CODE : 1)),
    stdout: stdout.text,
    stderr: stderr.text,
    truncated: stdout.truncated || stderr.truncated,
    timedOut,
    canceled,
    ...limits,
    diskLimitHit,
    ...(reason ? { reason } : {}),
    bytes: { stdout: capture.stdout.bytes, stderr: capture.stderr.bytes },
    lines: { stdout: capture.stdout.lines, stderr: capture.stderr.lines },
    durationMs: Math.round(o.durationMs),
    logPath: capture.logPath,
    ...(capture.log.cutNote ? { logCut: capture.log.cutNote } : {}),
  };
}
