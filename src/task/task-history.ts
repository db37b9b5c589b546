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
  /** The last commands shown with their output. */
  recent: 3,
  /** Output characters per recent command (head and tail kept). */
  recentOutputChars: 1500,
  /** Older commands shown as one line each. */
  condensed: 5,
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
 * Renders the history for the cheap model within a fixed budget, so the tokens per step
 * stop growing after the first steps: the last few commands verbatim (output capped),
 * the ones before as one line each (command, exit, first error line), and everything
 * older as a single count.
 */
export function renderHistory(entries: readonly HistoryEntry[], limits = HISTORY_LIMITS): string {
  if (entries.length === 0) return '(no commands run yet)';
  const recent = entries.slice(-limits.recent);
  const older = entries.slice(0, -limits.recent);
  const condensed = older.slice(-limits.condensed);
  const earliest = older.slice(0, -limits.condensed);
  const parts: string[] = [];
  if (earliest.length) {
    const failed = earliest.filter((e) => e.exitCode !== 0).length;
    parts.push(`(${earliest.length} earlier commands not shown: ${earliest.length - failed} succeeded, ${failed} failed)`);
  }
  for (const e of condensed) {
    const err = e.exitCode !== 0 ? keyLines(e.output, 1)[0] : undefined;
    parts.push(oneLine(`#${e.step} $ ${e.command} -> ${status(e)}${err ? `: ${err}` : ''}`, limits.condensedLineChars));
  }
  for (const e of recent) {
    const out = e.output.trim() === '' ? '(no output)' : clipMiddle(e.output.replace(/\n$/, ''), limits.recentOutputChars);
    parts.push(`#${e.step} $ ${e.command}\n${out}\n-> ${status(e)}${e.reason ? ` (${e.reason})` : ''}`);
  }
  return parts.join('\n');
}
