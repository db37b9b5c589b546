import { open } from 'node:fs/promises';
import { StringDecoder } from 'node:string_decoder';
import type { ExecResult } from '../sandbox/exec-types.js';
import { DEFAULT_SUMMARY_THRESHOLD_BYTES } from '../config/config-schema.js';
import { swallowed } from '../debug.js';

/** Summarizes long command output; a lite model in GenAIcode. May throw: the answer then falls back. */
export type OutputSummarizer = (
  input: { command: string; exitCode: number; output: string; reason?: string },
  signal?: AbortSignal,
) => Promise<string>;

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
  diskLimitHit?: true;
  pidsLimitHit?: true;
  reason?: string;
}

/** Default: output up to this size (after capping) goes to the model verbatim. */
const MAX_KEY_LINES = 12;
const MAX_LINE_CHARS = 200;

// `error`/`exception` also as word endings: ValueError, AssertionError, NullPointerException.
// Blanks before a line-start marker are `[^\S\r\n]`, not `\s`: the log scan runs this with
// the `m` flag over whole chunks, where `\s*` would cross blank lines and backtrack over
// every one of them (quadratic: minutes for a run of empty lines).
const ERROR_LINE =
  /(error|errors|exception)\b|\b(failed|failure|fail|fatal|traceback|panic|denied|refused|cannot|can't|unable|not found|no such|segmentation fault|killed|timeout|timed out|assert(ion)?|expected|undefined reference|warning)\b|^[^\S\r\n]*(E |FAIL|✗|✕|×|!)|:\d+:\d+: /i;

/** stdout and stderr as one text, stderr marked, as both summarizers see it. */
export function combinedOutput(r: Pick<ExecResult, 'stdout' | 'stderr'>): string {
  if (!r.stderr) return r.stdout;
  if (!r.stdout) return `[stderr]\n${r.stderr}`;
  return `${r.stdout}${r.stdout.endsWith('\n') ? '' : '\n'}[stderr]\n${r.stderr}`;
}

function clip(line: string): string {
  return line.length > MAX_LINE_CHARS ? `${line.slice(0, MAX_LINE_CHARS)}…` : line;
}

/**
 * Clips a long line so that the part at `at` (where the error pattern matched) stays in:
 * in a log, a stderr message can land in the middle of a long stdout line.
 */
function clipAround(raw: string, at: number): string {
  const lead = raw.length - raw.trimStart().length;
  const line = raw.trim();
  const pos = Math.max(0, at - lead);
  if (line.length <= MAX_LINE_CHARS || pos < MAX_LINE_CHARS - 60) return clip(line);
  const start = Math.min(pos - 40, line.length - MAX_LINE_CHARS);
  return `…${line.slice(start, start + MAX_LINE_CHARS)}${start + MAX_LINE_CHARS < line.length ? '…' : ''}`;
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

/**
 * How much of a long log `logKeyLines` reads: all of it up to this size; else the first
 * and the last half of this (0.1-0.5 s, the most when every line matches).
 */
const LOG_SCAN_BYTES = 16 * 1024 * 1024;
const SCAN_CHUNK_BYTES = 1024 * 1024;
/** Key lines from a log scan: the first ones, and the last ones (often the verdict). */
const SCAN_FIRST = 8;
const SCAN_LAST = 4;
/** The last error-like lines kept as candidates for the last key lines (repeats among them are dropped). */
const SCAN_LAST_CANDIDATES = 64;

interface LogKeyLines {
  /** Up to SCAN_FIRST + SCAN_LAST distinct error-like lines, in log order. */
  lines: string[];
  /** How many error-like lines the part read has in all (repeats and skipped ones too). */
  matchedLines: number;
  /** Some error-like lines that are not among `lines` may be new ones (not repeats, not skipped). */
  selection: boolean;
  /** Bytes read, and the log's size: less read means the middle of a huge log was not. */
  scannedBytes: number;
  totalBytes: number;
}

/**
 * Error-like lines (as keyLines finds them) from a command's full log: for output whose
 * middle was cut from the answer, where a failure in the middle would otherwise reach
 * neither the model nor the summarizer. The first SCAN_FIRST distinct lines for which
 * `skip` (already shown) is false, and the last SCAN_LAST. Reads at most `maxBytes` (the
 * start and the end of a bigger log): 0.1-0.2 s for 16 MiB of ordinary output, about 0.5 s
 * when every line matches.
 * Undefined when the log cannot be read or looks binary.
 */
export async function logKeyLines(
  logPath: string,
  options: { maxBytes?: number; skip?: (line: string) => boolean } = {},
): Promise<LogKeyLines | undefined> {
  const maxBytes = options.maxBytes ?? LOG_SCAN_BYTES;
  const skip = options.skip ?? (() => false);
  let file;
  try {
    file = await open(logPath, 'r');
  } catch (e) {
    swallowed(`opening ${logPath} for its key lines`, e);
    return undefined;
  }
  try {
    const totalBytes = (await file.stat()).size;
    const ranges: Array<[number, number]> =
      totalBytes <= maxBytes
        ? [[0, totalBytes]]
        : [
            [0, maxBytes / 2],
            [totalBytes - maxBytes / 2, totalBytes],
          ];
    const first: string[] = [];
    // After the first lines are found, later hits are only remembered (the line and where
    // the pattern matched in it), most recent last: the last key lines come from these.
    const recent: Array<[string, number]> = [];
    let matchedLines = 0;
    let laterMatches = 0;
    let scannedBytes = 0;
    const buf = Buffer.allocUnsafe(SCAN_CHUNK_BYTES);
    const global = new RegExp(ERROR_LINE.source, 'gim');
    for (const [from, to] of ranges) {
      let carry = '';
      // Characters cut by a chunk boundary are completed by the next chunk.
      const decoder = new StringDecoder('utf8');
      // A range that starts after a line's start has only the end of that line: skipped.
      let skipFirst = false;
      if (from > 0) {
        const { bytesRead } = await file.read(buf, 0, 1, from - 1);
        skipFirst = bytesRead === 1 && buf[0] !== 0x0a;
      }
      // Likewise a range that ends before the end of the log ends in the middle of a line.
      const endsLog = to >= totalBytes;
      for (let pos = from; pos < to;) {
        const { bytesRead } = await file.read(buf, 0, Math.min(SCAN_CHUNK_BYTES, to - pos), pos);
        if (bytesRead === 0) break;
        pos += bytesRead;
        scannedBytes += bytesRead;
        const chunk = buf.subarray(0, bytesRead);
        if (chunk.indexOf(0) !== -1) return undefined; // binary: nothing line-like to find
        let text = carry + decoder.write(chunk);
        const last = pos >= to;
        if (last && endsLog) text += decoder.end();
        const end = last && endsLog ? text.length : text.lastIndexOf('\n') + 1;
        carry = text.slice(end).slice(-4096);
        text = text.slice(0, end);
        if (skipFirst) {
          const nl = text.indexOf('\n');
          if (nl === -1) continue;
          text = text.slice(nl + 1);
          skipFirst = false;
        }
        // One pass of the pattern over the text; each hit stands for its whole line.
        global.lastIndex = 0;
        for (let m = global.exec(text); m; m = global.exec(text)) {
          const lineStart = text.lastIndexOf('\n', m.index) + 1;
          let lineEnd = text.indexOf('\n', m.index);
          if (lineEnd === -1) lineEnd = text.length;
          global.lastIndex = lineEnd + 1;
          matchedLines++;
          if (first.length < SCAN_FIRST) {
            const line = clipAround(text.slice(lineStart, lineEnd), m.index - lineStart);
            if (line && !first.includes(line) && !skip(line)) first.push(line);
          } else {
            laterMatches++;
            if (recent.length === SCAN_LAST_CANDIDATES) recent.shift();
            recent.push([text.slice(lineStart, lineEnd), m.index - lineStart]);
          }
        }
      }
    }
    const last: string[] = [];
    for (let i = recent.length - 1; i >= 0 && last.length < SCAN_LAST; i--) {
      const line = clipAround(...recent[i]!);
      if (line && !first.includes(line) && !last.includes(line) && !skip(line)) last.unshift(line);
    }
    return { lines: [...first, ...last], matchedLines, selection: laterMatches > SCAN_LAST, scannedBytes, totalBytes };
  } catch (e) {
    swallowed(`scanning ${logPath}`, e);
    return undefined;
  } finally {
    await file.close().catch((e: unknown) => swallowed(`closing ${logPath}`, e));
  }
}

/** keyLines keeps at least this many lines from the middle of a cut output. */
const MIN_MIDDLE_KEY_LINES = 4;

/**
 * Does the captured head and tail already show this log line? In the log, stdout and
 * stderr are interleaved as they arrived, so a line there can be a captured key line with
 * another stream's bytes around it: such a line is not new either.
 */
function shownAlready(line: string, output: string, outputLines: ReadonlySet<string>, captured: string[]): boolean {
  if (outputLines.has(line)) return true;
  // A clipped line (long lines only) is part of a line of the output, if shown.
  if (line.includes('…') && output.includes(line.replace(/^…|…$/g, ''))) return true;
  // Another stream's bytes before or after a captured line. Only for lines long enough to be
  // specific: a bare `FAIL` in the tail must not hide `--- FAIL: TestParse` in the middle.
  return captured.some((k) => k.length >= MIN_SPECIFIC_CHARS && (line.endsWith(k) || line.startsWith(k)));
}

/** A captured key line at least this long is specific enough to recognise inside another line. */
const MIN_SPECIFIC_CHARS = 16;

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
    ...(r.diskLimitHit ? { diskLimitHit: true as const } : {}),
    ...(r.pidsLimitHit ? { pidsLimitHit: true as const } : {}),
    ...(r.reason ? { reason: r.reason } : {}),
    logPath: r.logPath,
  });
  if (Buffer.byteLength(output) <= threshold && !r.truncated) return answer(output, 'verbatim');
  // Binary output is already reduced to a one-line note: nothing to summarize.
  const notes = [r.stdout, r.stderr].filter((t) => t !== '');
  if (notes.length > 0 && notes.every((t) => t.startsWith('[binary output:'))) return answer(output, 'verbatim');
  let key = keyLines(output);
  let summarizerOutput = output;
  if (r.truncated) {
    // The answer shows the head and the tail: error lines from the middle come from the log.
    const outputLines = new Set(output.split('\n').map((l) => l.trim()));
    const scan = await logKeyLines(r.logPath, { skip: (line) => shownAlready(line, output, outputLines, key) });
    const middle = scan?.lines ?? [];
    if (middle.length > 0) {
      // Room for at least MIN_MIDDLE_KEY_LINES: the captured ones give way from the middle
      // of their list, so the first (head) and the last (tail, stderr) stay, in that order.
      const fromMiddle = middle.slice(0, Math.max(MIN_MIDDLE_KEY_LINES, MAX_KEY_LINES - key.length));
      const keep = Math.min(key.length, MAX_KEY_LINES - fromMiddle.length);
      const before = key.slice(0, Math.ceil(keep / 2));
      const after = key.slice(key.length - Math.floor(keep / 2));
      key = [...before, ...fromMiddle, ...after];
      const selection = scan!.selection
        ? ` (a selection: the log has ${scan!.matchedLines} error-like lines, repeats and shown ones included)`
        : '';
      summarizerOutput += `\n[error-like lines from the omitted middle of the output, from the full log${selection}:]\n${middle.join('\n')}\n`;
    }
    if (scan && scan.scannedBytes < scan.totalBytes) {
      // Said even when nothing was found: the middle of a huge log was not looked at.
      summarizerOutput += `[the log's middle ${scan.totalBytes - scan.scannedBytes} bytes were not searched for errors: only its first and last ${Math.round(scan.scannedBytes / 2 / 1024 ** 2)} MiB]\n`;
    }
  }
  if (options.summarizer) {
    try {
      const summary = (
        await options.summarizer(
          { command: r.command, exitCode: r.exitCode, output: summarizerOutput, ...(r.reason ? { reason: r.reason } : {}) },
          options.signal,
        )
      ).trim();
      // A summary that contradicts the exit code was talked into it (by the output, most
      // likely): the extractive summary cannot be.
      if (summary && !contradictsExit(summary, r.exitCode))
        return answer(summary.length > 1500 ? `${summary.slice(0, 1500)}…` : summary, 'model', key);
      if (summary) swallowed('summarizer', new Error(`its summary contradicts exit code ${r.exitCode}: ${summary.slice(0, 200)}`));
    } catch (e) {
      // fall through to the extractive summary: the result is never held back
      swallowed('summarizer', e);
    }
  }
  return answer(extractiveSummary(r), 'extractive', key);
}
