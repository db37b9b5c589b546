import { buildCommandAnswer, resultFlags, type OutputSummarizer } from '../answer/command-answer.js';
import { ANSI_ESCAPE } from '../answer/key-lines.js';
import { signalField } from '../answer/signals.js';
import { sliceText } from '../display-text.js';
import type { CodeRun } from './code-executor.js';

/**
 * What the model receives for one codeExecute call, formatted as seed 003 asks: stdout,
 * stderr apart and labelled, the exit code, a timeout flagged; output over `maxOutputChars`
 * is cut with a marker, and then also summarized with its key lines (as runCommand's long
 * output is), the full log's path given.
 */
export interface CodeAnswer {
  exitCode: number;
  /** The signal that ended the snippet (exit 128 + N), and what it means. */
  signal?: string;
  stdout: string;
  /** Present when the snippet wrote to stderr. */
  stderr?: string;
  timedOut?: true;
  canceled?: true;
  oomKilled?: true;
  pidsLimitHit?: true;
  diskLimitHit?: true;
  reason?: string;
  /** Only when the output was cut: what all of it says, the lines that matter, and where it all is. */
  summary?: string;
  keyLines?: string[];
  logPath?: string;
  /** Whether a container kept alive from earlier calls ran it, or a new one. */
  container: CodeRun['container'];
  /** Why the earlier calls' container was replaced: files they left are gone. */
  stateLost?: string;
}

/** Of a stream cut to fit, the share kept from its start (the rest from its end). */
const HEAD_SHARE = 0.6;

function cut(text: string, max: number): string {
  if (text.length <= max) return text;
  const head = Math.floor(max * HEAD_SHARE);
  const tail = Math.max(0, max - head);
  return `${sliceText(text, 0, head)}\n[... ${text.length - head - tail} characters cut; the full output is in the log ...]\n${sliceText(text, text.length - tail)}`;
}

/** Shares `max` characters between stdout and stderr: each gets what it needs, up to half, the rest goes to the other. */
function shares(outLen: number, errLen: number, max: number): [number, number] {
  const half = Math.floor(max / 2);
  if (outLen <= half) return [outLen, Math.min(errLen, max - outLen)];
  if (errLen <= half) return [Math.min(outLen, max - errLen), errLen];
  return [half, max - half];
}

export async function buildCodeAnswer(
  run: CodeRun,
  options: { maxOutputChars: number; summarizer?: OutputSummarizer; signal?: AbortSignal },
): Promise<CodeAnswer> {
  const r = run.result;
  const stdout = r.stdout.replace(ANSI_ESCAPE, '');
  const stderr = r.stderr.replace(ANSI_ESCAPE, '');
  const whole = !r.truncated && stdout.length + stderr.length <= options.maxOutputChars;
  // A cut output also gets its summary and key lines, as runCommand's long output does.
  const command = whole
    ? undefined
    : await buildCommandAnswer(r, {
        thresholdBytes: 0,
        ...(options.summarizer ? { summarizer: options.summarizer } : {}),
        ...(options.signal ? { signal: options.signal } : {}),
      });
  const [outMax, errMax] = shares(stdout.length, stderr.length, options.maxOutputChars);
  return {
    exitCode: r.exitCode,
    ...signalField(r),
    stdout: whole ? stdout : cut(stdout, outMax),
    ...(stderr ? { stderr: whole ? stderr : cut(stderr, errMax) } : {}),
    ...resultFlags(r),
    ...(command
      ? {
          ...(command.summary ? { summary: command.summary } : {}),
          ...(command.keyLines ? { keyLines: command.keyLines } : {}),
          logPath: r.logPath,
        }
      : {}),
    container: run.container,
    ...(run.stateLost ? { stateLost: run.stateLost } : {}),
  };
}
