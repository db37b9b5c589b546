import type { ExecResult } from '../commands/exec-types.js';
import { combinedOutput, keyLines } from '../answer/command-answer.js';

/** One finished command, as the loop remembers it. */
export interface HistoryEntry {
  step: number;
  command: string;
  exitCode: number;
  timedOut: boolean;
  oomKilled: boolean;
  canceled: boolean;
  reason?: string;
  /** Capped output (the sandbox already capped it at capture time). */
  output: string;
  bytes: number;
}

interface HistoryLimits {
  budgetChars: number;
  newestOutputChars: number;
  olderOutputChars: number;
  fullEntryMinChars: number;
  /** Budget kept for one-line entries of older commands once there are any. */
  condensedReserveChars: number;
  commandChars: number;
  condensedLineChars: number;
}

export const HISTORY_LIMITS: Readonly<HistoryLimits> = {
  /** The whole history section, in characters: once the commands have printed this much, the step prompt stops growing. */
  budgetChars: 2400,
  /** Output characters of the newest command, and of each older one shown with its output (head and tail kept). */
  newestOutputChars: 2800,
  olderOutputChars: 2000,
  /** Below this much budget left, older commands get one line each. */
  fullEntryMinChars: 400,
  condensedReserveChars: 560,
  /** A command line is cut to this in the history (the log has it whole). */
  commandChars: 240,
  condensedLineChars: 140,
};

export function historyEntry(step: number, r: ExecResult): HistoryEntry {
  return {
    step,
    command: r.command,
    exitCode: r.exitCode,
    timedOut: r.timedOut,
    oomKilled: r.oomKilled,
    canceled: r.canceled,
    ...(r.reason ? { reason: r.reason } : {}),
    output: combinedOutput(r),
    bytes: r.bytes.stdout + r.bytes.stderr,
  };
}

function status(e: HistoryEntry): string {
  const flags = [e.timedOut && 'TIMED OUT', e.oomKilled && 'OOM-KILLED', e.canceled && 'CANCELED'].filter(Boolean).join(', ');
  return `exit ${e.exitCode}${flags ? ` ${flags}` : ''}`;
}

function clipMiddle(text: string, max: number): string {
  if (text.length <= max) return text;
  const half = Math.floor((max - 40) / 2);
  return `${text.slice(0, half)}\n[... ${text.length - 2 * half} characters cut ...]\n${text.slice(-half)}`;
}

function oneLine(s: string, max: number): string {
  const flat = s.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

/**
 * Renders the history for the cheap model within one character budget, newest first, so
 * the tokens per step stop growing once the commands have printed about a budget's worth:
 * the newest commands with their output (capped), then, when little budget is left, older
 * ones as one line each (command, exit, first error line), and the rest as a single count.
 */
export function renderHistory(entries: readonly HistoryEntry[], limits: Readonly<HistoryLimits> = HISTORY_LIMITS): string {
  if (entries.length === 0) return '(no commands run yet)';
  // What the one-line entries of older commands will take, up to the reserve: full entries
  // get the rest, so the section fills its budget as soon as there is enough output.
  let need = 0;
  for (let k = entries.length - 2; k >= 0; k--) {
    const len = condensedLine(entries[k]!, limits).length + 1;
    if (need + len > limits.condensedReserveChars) break;
    need += len;
  }
  let left = limits.budgetChars;
  const shown: string[] = [];
  let i = entries.length - 1;
  for (; i >= 0; i--) {
    const e = entries[i]!;
    const newest = i === entries.length - 1;
    if (!newest && left - need < limits.fullEntryMinChars) break;
    const command = oneLine(e.command, limits.commandChars);
    const cap = Math.min(newest ? limits.newestOutputChars : limits.olderOutputChars, left - need - command.length - 60);
    const out = e.output.trim() === '' ? '(no output)' : clipMiddle(e.output.replace(/\n$/, ''), Math.max(120, cap));
    const text = `#${e.step} $ ${command}\n${out}\n-> ${status(e)}${e.reason ? ` (${e.reason})` : ''}`;
    shown.push(text);
    left -= text.length + 1;
  }
  // One-line entries take at most the reserve, so the layout (and size) is the same
  // whether 15 or 80 commands came before.
  let reserveLeft = Math.min(left, limits.condensedReserveChars);
  for (; i >= 0; i--) {
    const line = condensedLine(entries[i]!, limits);
    if (reserveLeft < line.length + 1) break;
    shown.push(line);
    reserveLeft -= line.length + 1;
  }
  if (i >= 0) {
    const earliest = entries.slice(0, i + 1);
    const failed = earliest.filter((e) => e.exitCode !== 0).length;
    shown.push(
      `(${earliest.length} earlier commands not shown: ${earliest.length - failed} succeeded, ${failed} failed; all are in the task log)`,
    );
  }
  return shown.reverse().join('\n');
}

/** One older command on one line. The exit status survives the cut: the command and the error are shortened, not the status. */
function condensedLine(e: HistoryEntry, limits: Readonly<HistoryLimits>): string {
  const err = e.exitCode !== 0 ? keyLines(e.output, { exitCode: e.exitCode })[0] : undefined;
  const tail = ` -> ${status(e)}`;
  const head = `#${e.step} $ `;
  const room = Math.max(20, limits.condensedLineChars - tail.length - head.length);
  const cmd = oneLine(e.command, Math.min(limits.commandChars, err ? Math.ceil(room * 0.6) : room));
  const errText = err ? `: ${oneLine(err, Math.max(10, room - cmd.length - 2))}` : '';
  return `${head}${cmd}${tail}${errText}`;
}
