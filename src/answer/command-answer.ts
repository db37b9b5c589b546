import type { ExecResult } from '../commands/exec-types.js';
import { DEFAULT_SUMMARY_THRESHOLD_BYTES } from '../config/config-schema.js';
import { swallowed } from '../debug.js';
import { sliceText } from '../display-text.js';
import { ANSI_ESCAPE, clipLine, KEY_LINE_BUDGET, keyLineCost, keyLines, selectKeyLines } from './key-lines.js';
import { scanLog } from './log-scan.js';
import { killedBySignal, signalField } from './signals.js';

export { keyLines } from './key-lines.js';

/** Summarizes long command output; a lite model in GenAIcode. May throw: the answer then falls back. */
export type OutputSummarizer = (
  input: {
    command: string;
    exitCode: number;
    output: string;
    reason?: string;
    /** Lines the main model gets verbatim beside the summary: the summary need not repeat them. */
    keyLines?: string[];
  },
  signal?: AbortSignal,
) => Promise<string>;

/**
 * The compact answer for one command (runCommand's output). Every field pays its way: a
 * flag is present only when set, and the output is either whole (`output`) or summarized
 * (`summary` with `keyLines`).
 */
export interface CommandAnswer {
  exitCode: number;
  /** The signal that ended the command, read from its exit code (139: SIGSEGV), and what it means. */
  signal?: string;
  /** The whole output, when short: stdout, then stderr after a `[stderr]` line. */
  output?: string;
  /** Else a summary of it. */
  summary?: string;
  /** How `summary` was made: by the lite model, or extracted from the output (no model, or one that failed). */
  summaryKind?: 'model' | 'extractive';
  /** Beside a summary (or a note of binary output): the lines a developer needs (verdict, errors, failing tests, locations), verbatim. */
  keyLines?: string[];
  timedOut?: true;
  canceled?: true;
  oomKilled?: true;
  diskLimitHit?: true;
  pidsLimitHit?: true;
  reason?: string;
  /** With a writable project: what the command changed that was not applied to the project, and why. */
  projectNotApplied?: string[];
  /** The shell's folder, when the command changed it (the next command starts there). */
  folder?: string;
  /** What of the shell's state (folder, exported variables) was lost, and why. */
  shell?: string;
  /** What the full log does not hold (its middle dropped at a cap, or stopped for want of disk space). */
  logCut?: string;
  /** The full log: every byte, stdout and stderr as they came. */
  logPath: string;
}

/** The flags of a result that are set, and its reason: an answer names only what happened. */
export function resultFlags(
  r: Pick<
    ExecResult,
    'timedOut' | 'canceled' | 'oomKilled' | 'diskLimitHit' | 'pidsLimitHit' | 'reason' | 'projectNotApplied' | 'logCut' | 'folder' | 'shell'
  >,
): Pick<
  CommandAnswer,
  'timedOut' | 'canceled' | 'oomKilled' | 'diskLimitHit' | 'pidsLimitHit' | 'reason' | 'projectNotApplied' | 'logCut' | 'folder' | 'shell'
> {
  return {
    ...(r.timedOut ? { timedOut: true as const } : {}),
    ...(r.canceled ? { canceled: true as const } : {}),
    ...(r.oomKilled ? { oomKilled: true as const } : {}),
    ...(r.diskLimitHit ? { diskLimitHit: true as const } : {}),
    ...(r.pidsLimitHit ? { pidsLimitHit: true as const } : {}),
    ...(r.reason ? { reason: r.reason } : {}),
    ...(r.projectNotApplied?.length ? { projectNotApplied: r.projectNotApplied.slice(0, 10) } : {}),
    ...(r.logCut ? { logCut: r.logCut } : {}),
    ...(r.folder ? { folder: r.folder } : {}),
    ...(r.shell ? { shell: r.shell } : {}),
  };
}

/** What the main model receives: the answer without what it cannot use (the log's path is in the user's line). */
export function answerForModel(a: CommandAnswer): Omit<CommandAnswer, 'logPath' | 'summaryKind'> {
  const { logPath: _logPath, summaryKind: _kind, ...rest } = a;
  return rest;
}

export interface TimeoutArgument {
  /** Its name, as the caller passes it (runCommand's `timeoutMs`). */
  name: string;
  /** Its largest value, in milliseconds. */
  maxMs: number;
}

/** A timed-out command's reason, with how to ask for longer: the model would otherwise retry with the same limit. */
function moreTime(reason: string | undefined, arg: TimeoutArgument): string {
  const most = arg.maxMs % 60_000 === 0 ? `${arg.maxMs / 60_000} min` : `${arg.maxMs / 1000} s`;
  return `${reason ?? 'timed out'}; to give it longer, run it again with ${arg.name} up to ${arg.maxMs} (${most})`;
}

/** A summary beside key lines is cut to this: the key lines carry the facts. */
const SUMMARY_WITH_KEY_LINES = 240;
/** A summary on its own. */
const SUMMARY_ALONE = 800;

/** stdout and stderr as one text, stderr marked, as both summarizers see it. */
export function combinedOutput(r: Pick<ExecResult, 'stdout' | 'stderr'>): string {
  if (!r.stderr) return r.stdout;
  if (!r.stdout) return `[stderr]\n${r.stderr}`;
  return `${r.stdout}${r.stdout.endsWith('\n') ? '' : '\n'}[stderr]\n${r.stderr}`;
}

/** Cuts a summary to `max` characters at the end of a sentence, or of a word. */
function cutSummary(text: string, max: number): string {
  if (text.length <= max) return text;
  const part = sliceText(text, 0, max);
  const sentence = Math.max(part.lastIndexOf('. '), part.lastIndexOf('.\n'));
  if (sentence >= max / 3) return part.slice(0, sentence + 1);
  const word = part.lastIndexOf(' ');
  return `${part.slice(0, word > max / 2 ? word : max - 1)}…`;
}

/** Number words a summary may use for an exit code. */
const CODE_WORDS: Record<string, number> = { zero: 0, one: 1, two: 2, three: 3 };

/**
 * An exit code a summary names: after `exit`, `exited`, `exit code`, `exit status`,
 * `return code`/`status`/`value`, or a bare `returned 0.`; as digits, as a number word, or
 * as `non-zero` (NaN: any code but 0).
 */
const NAMED_CODE =
  /\b(?:exit(?:ed|s|ing)?(?:\s+(?:with\s+)?(?:an?\s+)?(?:code|status))?|return(?:ed|s)?\s+(?:with\s+)?(?:an?\s+)?(?:code|status|value))\b[^.\n\d]{0,20}?\b(-?\d+|zero|one|two|three|non-?zero)\b|\breturned\s+(-?\d+|zero|one|non-?zero)\b(?![ \t]+[a-z])/gi;

/** "No errors", "0 failures", "without failing tests": read as success, not as a failure word. */
const NEGATED_FAILURE = /\b(?:no|without|zero|0)\s+(?:\w+\s+)?(?:errors?|failures?|failed|failing|problems|issues|warnings?)\b/gi;

const SUCCESS_WORDS =
  /\b(?:succeed(?:ed|s)?|success(?:ful(?:ly)?)?|pass(?:ed|es|ing)?|clean(?:ly)?|normally|worked|fine|ok|okay|green|all good)\b/i;

const FAILURE_WORDS =
  /\b(?:fail\w*|error\w*|non-?zero|crash\w*|abort\w*|denied|not found|timed? ?out|killed|exception|traceback|panic\w*|segfault|refused|missing|cannot|can't|couldn't|unable|invalid|warn\w*|broken|red)\b/i;

/**
 * Whether a model's summary contradicts the command's real exit code: it names another exit
 * code (in digits, in words, or "non-zero" for a success), or it calls a failed command a
 * success without naming any failure. Output a command printed can steer the summarizer,
 * so a contradicting summary is replaced by the extractive one.
 */
export function contradictsExit(summary: string, exitCode: number): boolean {
  let namesTheCode = false;
  for (const m of summary.matchAll(NAMED_CODE)) {
    const word = (m[1] ?? m[2] ?? '').toLowerCase();
    const named = /^non-?zero$/.test(word) ? NaN : (CODE_WORDS[word] ?? Number(word));
    if (Number.isNaN(named) ? exitCode === 0 : named !== exitCode) return true;
    namesTheCode = true;
  }
  if (exitCode === 0) return false;
  const text = summary.replace(NEGATED_FAILURE, ' success ');
  return SUCCESS_WORDS.test(text) && !FAILURE_WORDS.test(text) && !namesTheCode;
}

/**
 * The first line of the summary of a command that failed, written here from the exit code
 * and the flags, never by a model: whatever a summary says after it (a model can be talked
 * into calling anything a success, by the output it reads), the answer leads with the
 * failure. Undefined for a command that succeeded.
 */
export function failureLine(
  r: Pick<ExecResult, 'exitCode' | 'timedOut' | 'canceled' | 'oomKilled' | 'diskLimitHit' | 'pidsLimitHit' | 'reason'>,
): string | undefined {
  if (r.exitCode === 0 && !r.timedOut && !r.canceled && !r.oomKilled && !r.diskLimitHit) return undefined;
  const killedBy = killedBySignal(r);
  const parts = [
    `exit code ${r.exitCode}`,
    ...(killedBy ? [`killed by ${killedBy.name}`] : []),
    ...(r.timedOut ? ['timed out'] : []),
    ...(r.canceled ? ['canceled'] : []),
    ...(r.oomKilled ? ['killed by the memory limit'] : []),
    ...(r.diskLimitHit ? ['over the disk limit'] : []),
    ...(r.pidsLimitHit ? ['hit the process limit'] : []),
  ];
  return `FAILED: ${parts.join(', ')}.`;
}

/**
 * The log holds both streams in arrival order, so a line can reach it with the other
 * stream's bytes inside (`...filler FAILED: 3 tests` when stderr came mid-line): the key
 * lines of the captured streams, which are exact, are kept too, in place of log-only ones
 * when the budget is full.
 */
function withCapturedKeyLines(fromLog: string[], fromCaptured: string[], logCandidates: readonly string[]): string[] {
  const bare = (k: string) => k.replace(/^…|…$/g, '');
  // A log line with another stream's bytes around a captured key line gives way to it.
  const log = fromLog.map((l) => (fromCaptured.includes(l) ? l : (fromCaptured.find((k) => l.includes(bare(k))) ?? l)));
  const deduped = log.filter((l, i) => log.indexOf(l) === i);
  // Only what the log's scan could not see as that line (another stream's bytes in its line
  // of the log) is added: a line it saw whole and left out was left out for the budget, for
  // the lines of other failures, and added at the end it would stand away from its own test.
  const seen = new Set(logCandidates.map((c) => c.trim()));
  const missing = fromCaptured.filter((k) => !deduped.some((l) => l.includes(bare(k))) && !seen.has(bare(k)));
  if (!missing.length) return deduped;
  const key = [...deduped, ...missing];
  const over = () => key.length > KEY_LINE_BUDGET.lines || key.reduce((n, k) => n + keyLineCost(k), 0) > KEY_LINE_BUDGET.chars;
  for (let i = Math.floor(deduped.length / 2); over() && i < key.length;) {
    if (fromCaptured.includes(key[i]!)) i++;
    else key.splice(i, 1);
  }
  return key.slice(0, KEY_LINE_BUDGET.lines);
}

/** A summary without a model: the size, and the last lines (the first ones too when no key line says more). */
export function extractiveSummary(r: Pick<ExecResult, 'stdout' | 'stderr' | 'bytes' | 'lines'>, key: readonly string[] = []): string {
  // Without colour codes, as the output and the key lines are given (the summary quotes lines of both).
  const lines = combinedOutput(r)
    .replace(ANSI_ESCAPE, '')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && l !== '[stderr]' && !l.startsWith('[... ') && !key.includes(clipLine(l)));
  const total = r.lines.stdout + r.lines.stderr;
  const parts = [`${total} lines, ${r.bytes.stdout + r.bytes.stderr} bytes of output.`];
  const head = key.length ? [] : lines.slice(0, 3);
  const tail = lines.slice(head.length).slice(key.length ? -2 : -4);
  if (head.length) parts.push('First lines:', ...head.map((l) => clipLine(l)));
  if (tail.length) parts.push('Last lines:', ...tail.map((l) => clipLine(l)));
  return parts.join('\n');
}

/**
 * Builds what the main model sees for one command. Short output (<= thresholdBytes
 * after capping) is returned whole with no model call; longer output is summarized by
 * `summarizer` (the lite model), with the key lines kept verbatim beside it; if the
 * summarizer is missing or fails, an extractive summary is used. Never throws.
 */
export async function buildCommandAnswer(
  r: ExecResult,
  options: {
    thresholdBytes?: number;
    summarizer?: OutputSummarizer;
    signal?: AbortSignal;
    /** The argument a caller sets a longer timeout with, and its most: a timed-out answer names them. */
    timeoutArgument?: TimeoutArgument;
  } = {},
): Promise<CommandAnswer> {
  const threshold = options.thresholdBytes ?? DEFAULT_SUMMARY_THRESHOLD_BYTES;
  // Colour codes cost tokens and say nothing to a model: the text without them.
  const output = combinedOutput(r).replace(ANSI_ESCAPE, '');
  const killedBy = killedBySignal(r);
  // Field order is what the model reads first: the exit, then the output, then the details.
  const failed = failureLine(r);
  const answer = (text: Pick<CommandAnswer, 'output' | 'summary' | 'summaryKind'>, key?: string[]): CommandAnswer => ({
    exitCode: r.exitCode,
    ...signalField(r),
    ...text,
    // A summary of a failure starts with our line, whoever wrote the rest.
    ...(text.summary !== undefined && failed ? { summary: `${failed}\n${text.summary}` } : {}),
    ...(key && key.length ? { keyLines: key } : {}),
    ...resultFlags(r),
    ...(r.timedOut && options.timeoutArgument ? { reason: moreTime(r.reason, options.timeoutArgument) } : {}),
    logPath: r.logPath,
  });
  if (Buffer.byteLength(output) <= threshold && !r.truncated) return answer({ output });
  // Binary output is already reduced to a one-line note: nothing to summarize. Its log may
  // still hold text lines (`cat logs/*` over a large gzip member): their key lines go beside it.
  const notes = [r.stdout, r.stderr].filter((t) => t !== '');
  if (notes.length > 0 && notes.every((t) => t.startsWith('[binary output:'))) {
    const scan = await scanLog(r.logPath);
    return answer({ output }, scan ? selectKeyLines(scan.collector, { exitCode: r.exitCode, fallback: false }) : undefined);
  }
  const select = { exitCode: r.exitCode, signal: killedBy !== undefined };
  // A cut output: every line of the full log is classified, the middle too (text lines
  // only: an error beside binary data is still found). Else, or when the log cannot be read, the output as captured.
  const scan = r.truncated ? await scanLog(r.logPath) : undefined;
  let key: string[];
  let summarizerOutput = output;
  if (scan) {
    key = withCapturedKeyLines(
      selectKeyLines(scan.collector, select),
      keyLines(output, { ...select, fallback: false }),
      scan.collector.candidates().map((c) => c.text),
    );
    const fromMiddle = key.filter((k) => !output.includes(k.replace(/^…|…$/g, '')));
    if (fromMiddle.length)
      summarizerOutput += `\n[key lines from the omitted middle of the output, from the full log:]\n${fromMiddle.join('\n')}\n`;
    if (scan.scannedBytes < scan.totalBytes) {
      // Said even when nothing was found: the middle of a huge log was not looked at.
      summarizerOutput += `[the log's middle ${scan.totalBytes - scan.scannedBytes} bytes were not searched for errors: only its first and last ${Math.round(scan.scannedBytes / 2 / 1024 ** 2)} MiB]\n`;
    }
  } else {
    key = keyLines(output, select);
  }
  if (options.summarizer) {
    try {
      const summary = (
        await options.summarizer(
          {
            command: r.command,
            exitCode: r.exitCode,
            output: summarizerOutput,
            ...(r.reason ? { reason: r.reason } : killedBy ? { reason: `killed by ${killedBy.name}` } : {}),
            ...(key.length ? { keyLines: key } : {}),
          },
          options.signal,
        )
      ).trim();
      // A summary that contradicts the exit code was talked into it (by the output, most
      // likely): the extractive summary cannot be.
      if (summary && !contradictsExit(summary, r.exitCode))
        return answer({ summary: cutSummary(summary, key.length ? SUMMARY_WITH_KEY_LINES : SUMMARY_ALONE), summaryKind: 'model' }, key);
      if (summary) swallowed('summarizer', new Error(`its summary contradicts exit code ${r.exitCode}: ${summary.slice(0, 200)}`));
    } catch (e) {
      // fall through to the extractive summary: the result is never held back
      swallowed('summarizer', e);
    }
  }
  return answer({ summary: extractiveSummary(r, key), summaryKind: 'extractive' }, key);
}
