import type { ExecResult } from '../sandbox/exec-types.js';
import { combinedOutput, keyLines } from '../output/command-answer.js';

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

export const HISTORY_LIMITS = {
  /** The whole history section, in characters: once the commands have printed this much, the step prompt stops growing. */
  budgetChars: 3200,
  /** Output characters of the newest command, and of each older one shown with its output (head and tail kept). */
  newestOutputChars: 2800,
  olderOutputChars: 2000,
  /** Below this much budget left, older commands get one line each. */
  fullEntryMinChars: 400,
  /** A command line is cut to this in the history (the log has it whole). */
  commandChars: 240,
  condensedLineChars: 140,
} as const;

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
export function renderHistory(entries: readonly HistoryEntry[], limits = HISTORY_LIMITS): string {
  if (entries.length === 0) return '(no commands run yet)';
  let left = limits.budgetChars;
  const shown: string[] = [];
  let i = entries.length - 1;
  for (; i >= 0; i--) {
    const e = entries[i]!;
    const newest = i === entries.length - 1;
    const command = oneLine(e.command, limits.commandChars);
    if (left >= limits.fullEntryMinChars) {
      const cap = Math.min(newest ? limits.newestOutputChars : limits.olderOutputChars, left - command.length - 60);
      const out = e.output.trim() === '' ? '(no output)' : clipMiddle(e.output.replace(/\n$/, ''), Math.max(120, cap));
      const text = `#${e.step} $ ${command}\n${out}\n-> ${status(e)}${e.reason ? ` (${e.reason})` : ''}`;
      shown.push(text);
      left -= text.length + 1;
      continue;
    }
    const err = e.exitCode !== 0 ? keyLines(e.output, 1)[0] : undefined;
    const line = oneLine(`#${e.step} $ ${command} -> ${status(e)}${err ? `: ${err}` : ''}`, limits.condensedLineChars);
    if (left < line.length + 1) break;
    shown.push(line);
    left -= line.length + 1;
  }
  if (i >= 0) {
    const earliest = entries.slice(0, i + 1);
    const failed = earliest.filter((e) => e.exitCode !== 0).length;
    shown.push(`(${earliest.length} earlier commands not shown: ${earliest.length - failed} succeeded, ${failed} failed; all are in the task log)`);
  }
  return shown.reverse().join('\n');
}
