import type { ExecResult } from '../sandbox/exec-types.js';

/** Summarizes long command output; a lite model in GenAIcode. May throw: the answer then falls back. */
export type OutputSummarizer = (input: { command: string; exitCode: number; output: string; reason?: string }, signal?: AbortSignal) => Promise<string>;

/** The compact answer the main model receives for one command (runCommand's output). */
export interface CommandAnswer {
  exitCode: number;
  /** The output itself when short; else a summary. */
  summary: string;
  /** How `summary` was made. */
  summaryKind: 'verbatim' | 'model' | 'extractive';
  /** Output is longer than what the model sees: the log has all of it. */
  truncated: boolean;
  logPath: string;
  /** Error lines, failing tests, the last lines: kept verbatim beside a summary. */
  keyLines?: string[];
  timedOut?: true;
  canceled?: true;
  oomKilled?: true;
  pidsLimitHit?: true;
  reason?: string;
}

/** Default: output up to this size (after capping) goes to the model verbatim. */
export const DEFAULT_SUMMARY_THRESHOLD_BYTES = 2048;
const MAX_KEY_LINES = 12;
const MAX_LINE_CHARS = 200;

// `error`/`exception` also as word endings: ValueError, AssertionError, NullPointerException.
const ERROR_LINE = /(error|errors|exception)\b|\b(failed|failure|fail|fatal|traceback|panic|denied|refused|cannot|can't|unable|not found|no such|segmentation fault|killed|timeout|timed out|assert(ion)?|expected|undefined reference|warning)\b|^\s*(E |FAIL|✗|✕|×|!)|:\d+:\d+: /i;

/** stdout and stderr as one text, stderr marked, as both summarizers see it. */
export function combinedOutput(r: Pick<ExecResult, 'stdout' | 'stderr'>): string {
  if (!r.stderr) return r.stdout;
  if (!r.stdout) return `[stderr]\n${r.stderr}`;
  return `${r.stdout}${r.stdout.endsWith('\n') ? '' : '\n'}[stderr]\n${r.stderr}`;
}

function clip(line: string): string {
  return line.length > MAX_LINE_CHARS ? `${line.slice(0, MAX_LINE_CHARS)}…` : line;
}

/** Lines worth keeping verbatim: errors, failures, the exit reason; deduplicated, in order. */
export function keyLines(text: string, max = MAX_KEY_LINES): string[] {
  const seen = new Set<string>();
  const out: string[] = [];
  for (const raw of text.split('\n')) {
    const line = raw.trimEnd();
    if (!line || line.startsWith('[... ') || !ERROR_LINE.test(line)) continue;
    const c = clip(line.trim());
    if (seen.has(c)) continue;
    seen.add(c);
    out.push(c);
    if (out.length >= max) break;
  }
  return out;
}

/** A summary without a model: the first lines, the last lines, and counts. */
export function extractiveSummary(r: Pick<ExecResult, 'stdout' | 'stderr' | 'bytes' | 'lines'>): string {
  const text = combinedOutput(r);
  const lines = text.split('\n').filter((l) => l.trim() !== '' && !l.startsWith('[... '));
  const head = lines.slice(0, 4).map(clip);
  const tail = lines.length > 10 ? lines.slice(-6).map(clip) : lines.slice(4).map(clip);
  const total = r.lines.stdout + r.lines.stderr;
  const parts = [`${total} lines, ${r.bytes.stdout + r.bytes.stderr} bytes of output.`, 'First lines:', ...head];
  if (tail.length) parts.push(lines.length > 10 ? 'Last lines:' : '', ...tail);
  return parts.filter((p) => p !== '').join('\n');
}

/**
 * Builds what the main model sees for one command. Short output (<= thresholdBytes
 * after capping) is returned verbatim with no model call; longer output is summarized by
 * `summarizer` (the lite model), with error lines kept verbatim beside it; if the
 * summarizer is missing or fails, an extractive summary is used. Never throws.
 */
export async function buildCommandAnswer(
  r: ExecResult,
  options: { thresholdBytes?: number; summarizer?: OutputSummarizer; signal?: AbortSignal } = {},
): Promise<CommandAnswer> {
  const threshold = options.thresholdBytes ?? DEFAULT_SUMMARY_THRESHOLD_BYTES;
  const output = combinedOutput(r);
  // Field order is what the model reads first: the exit, then the output, then the details.
  const answer = (summary: string, summaryKind: CommandAnswer['summaryKind'], key?: string[]): CommandAnswer => ({
    exitCode: r.exitCode,
    summary,
    summaryKind,
    ...(key && key.length ? { keyLines: key } : {}),
    truncated: r.truncated,
    ...(r.timedOut ? { timedOut: true as const } : {}),
    ...(r.canceled ? { canceled: true as const } : {}),
    ...(r.oomKilled ? { oomKilled: true as const } : {}),
    ...(r.pidsLimitHit ? { pidsLimitHit: true as const } : {}),
    ...(r.reason ? { reason: r.reason } : {}),
    logPath: r.logPath,
  });
  if (Buffer.byteLength(output) <= threshold && !r.truncated) return answer(output, 'verbatim');
  // Binary output is already reduced to a one-line note: nothing to summarize.
  const notes = [r.stdout, r.stderr].filter((t) => t !== '');
  if (notes.length > 0 && notes.every((t) => t.startsWith('[binary output:'))) return answer(output, 'verbatim');
  const key = keyLines(output);
  if (options.summarizer) {
    try {
      const summary = (await options.summarizer({ command: r.command, exitCode: r.exitCode, output, ...(r.reason ? { reason: r.reason } : {}) }, options.signal)).trim();
      if (summary) return answer(summary.length > 1500 ? `${summary.slice(0, 1500)}…` : summary, 'model', key);
    } catch {
      // fall through to the extractive summary: the result is never held back
    }
  }
  return answer(extractiveSummary(r), 'extractive', key);
}
