import { open } from 'node:fs/promises';
import { StringDecoder } from 'node:string_decoder';
import { swallowed } from '../debug.js';
import { sliceText } from '../display-text.js';
import { isBinaryLine } from '../capture/stream-window.js';
import { classifyLine, type LineClass } from './line-rules.js';

/**
 * Key lines: the lines of a command's output a developer needs to fix a failure, kept
 * verbatim beside a summary. Every line is classified (line-rules.ts); the selection keeps
 * the final verdict, then each failure whole (its headline, what it compared, where it
 * happened in the project's own code), errors before warnings, within a budget.
 */

/** One classified line and where it was in the output. */
interface Candidate extends LineClass {
  line: number;
  text: string;
}

/** A failure: its headline and the lines that belong to it. */
interface Failure {
  head: Candidate;
  parts: Candidate[];
}

export interface KeyLineBudget {
  /** At most this many lines. */
  lines: number;
  /** At most this many characters, all lines together. */
  chars: number;
}

export const KEY_LINE_BUDGET: Readonly<KeyLineBudget> = { lines: 28, chars: 1600 };
/** Longer lines are clipped, around what made them key lines. */
export const MAX_LINE_CHARS = 200;
/** Of a clipped line whose key part is at its start: this much of the start, the rest of the end. */
const CLIP_HEAD = 120;
/** A line belongs to the failure above (or below) it when at most this many lines lie between. */
const ATTACH_GAP = 4;
/**
 * What a failure compared, and where, may come further below its headline: pytest and
 * jest print the test's source between its name and its `E` lines or its stack.
 */
const FAR_PARTS = new Set(['detail', 'location', 'diff', 'frame']);
const FAR_GAP = 40;
/** Per failure, at most: */
const MAX_DETAILS = 5;
const MAX_FRAMES = 4;
const MAX_DIFF = 6;
/** Verdict lines kept, counted from the end. */
const MAX_VERDICTS = 2;
/** Loose error words a failed run with nothing better keeps: the last ones, then the first ones. */
const FALLBACK_LAST = 4;
const FALLBACK_FIRST = 2;
/** Warnings or details with no headline a failed run with nothing better keeps: the first ones. */
const FALLBACK_LINES = 8;
/** Lines kept before a death by a signal: what the program was doing. */
const LAST_LINES = 3;

/**
 * Collects the classified lines of an output, line by line, in bounded memory: the first
 * and the last CANDIDATES of them, and the last few lines of any kind.
 */
export class KeyLineCollector {
  /**
   * Headlines and what belongs to them, in one pool; warnings, loose error words and diff
   * lines in another, so that thousands of warnings cannot crowd out the one error.
   */
  private readonly strong = new CandidatePool(400);
  private readonly weak = new CandidatePool(100);
  /** A ring of the last LAST_LINES lines. */
  private readonly lastLines: Array<{ line: number; text: string }> = [];
  private lastAt = 0;
  private lineNo = 0;
  /** A line that ends in a colon: its number and indent, and how many lines below continue it. */
  private cont: { line: number; indent: number; lines: number } | undefined;
  /** Lines passed over because they were binary. */
  binaryLines = 0;

  push(raw: string): void {
    const n = this.lineNo++;
    // Colour codes (tsc and maven print them even when not on a terminal) are no part of the text.
    const text = (raw.includes('\x1b') ? raw.replace(ANSI_ESCAPE, '') : raw).trimEnd();
    if (text.length === 0 || text.startsWith('[... ') || text.startsWith('[binary')) return;
    if (isBinaryLine(text)) {
      this.binaryLines++;
      return;
    }
    this.lastLines[this.lastAt++ % LAST_LINES] = { line: n, text };
    // A line that ends in a colon continues below: a headline on its next line (rust's
    // panic message), a detail on up to three lines indented deeper (`expected:` in TAP's YAML).
    const indent = text.length - text.trimStart().length;
    const own = classifyLine(text);
    const cont = this.cont;
    const c = own ?? (cont && n - cont.line <= cont.lines && (cont.lines === 1 || indent > cont.indent) ? CONTINUATION : undefined);
    if (own && text.endsWith(':') && own.kind !== 'frame')
      this.cont = { line: n, indent, lines: own.kind === 'error' || own.kind === 'test' ? 1 : 3 };
    else if (!c || own) this.cont = undefined;
    if (!c) return;
    (WEAK_KINDS.has(c.kind) ? this.weak : this.strong).push({ ...c, line: n, text });
  }

  pushText(text: string): void {
    for (const line of text.split('\n')) this.push(line);
  }

  /** Every candidate kept, in output order. */
  candidates(): Candidate[] {
    return [...this.strong.all(), ...this.weak.all()].sort((a, b) => a.line - b.line);
  }

  last(): Array<{ line: number; text: string }> {
    return [...this.lastLines].sort((x, y) => x.line - y.line);
  }
}

/** The first `size` candidates and the last `size`, in bounded memory. */
class CandidatePool {
  private readonly first: Candidate[] = [];
  private readonly recent: Candidate[] = [];
  constructor(private readonly size: number) {}

  push(c: Candidate): void {
    if (this.first.length < this.size) this.first.push(c);
    else {
      this.recent.push(c);
      if (this.recent.length > this.size) this.recent.shift();
    }
  }

  all(): Candidate[] {
    return [...this.first, ...this.recent];
  }
}

const WEAK_KINDS = new Set(['warning', 'mention', 'diff']);
// eslint-disable-next-line no-control-regex -- the escape character starts what is removed
export const ANSI_ESCAPE = /\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07/g;

const CONTINUATION: LineClass = { kind: 'detail', family: 'continuation', attach: 'prev', library: false, at: 0 };

const HEADLINES = new Set(['error', 'test', 'verdict']);

/**
 * The test a headline names, when runners name it twice (pytest's `___ test_x ___` and its
 * `FAILED path::test_x - ...`; unittest's `test_x (...) ... FAIL` and `FAIL: test_x (...)`;
 * cargo's `test m::x ... FAILED` and `---- m::x stdout ----`).
 */
function testName(text: string): string | undefined {
  const m =
    /^_{3,} (?:ERROR at (?:setup|teardown) of |ERROR collecting )?(?:[\w.]+\.)?(\S.{0,300}?) _{3,}$/.exec(text) ??
    /^(?:FAILED|ERROR) [^\s:]*::(?:\w+::)?(.{1,300}?)(?: - .*)?$/.exec(text) ??
    /^(?:FAIL|ERROR): (\S+) \(/.exec(text) ??
    /^(\S+) \(\S+\) \.\.\. (?:FAIL|ERROR)$/.exec(text) ??
    /^test (\S+) \.\.\. FAILED$/.exec(text) ??
    /^---- (\S+) stdout ----$/.exec(text);
  return m?.[1];
}

/** Failures of the same test become one: the later headline, the parts of both. */
function mergeSameTest(fs: Failure[]): Failure[] {
  const byName = new Map<string, Failure>();
  const out: Failure[] = [];
  for (const f of fs) {
    const name = f.head.kind === 'test' ? testName(f.head.text) : undefined;
    const same = name === undefined ? undefined : byName.get(name);
    if (!same) {
      if (name !== undefined) byName.set(name, f);
      out.push(f);
      continue;
    }
    // The later one: the report after the progress line, the summary line after the report.
    same.head = f.head;
    same.parts.push(...f.parts);
  }
  return out;
}

/** Groups candidates into failures: a headline and the details, frames and locations around it. */
function failures(cands: Candidate[]): Failure[] {
  const out: Failure[] = [];
  let pendingNext: Candidate[] = [];
  let current: Failure | undefined;
  let lastLine = -Infinity;
  for (const c of cands) {
    if (c.kind === 'mention') continue; // no part of a failure (a run with nothing better takes them alone)
    if (c.kind === 'warning') {
      // Neither a failure nor a part of one: what follows a warning (its --> location) is its own.
      current = undefined;
      continue;
    }
    // An exception printed just below a failing test's name, indented deeper, is that test's
    // error (node --test's spec reporter, jest), not a failure of its own.
    const under =
      current &&
      current.head.kind === 'test' &&
      c.kind === 'error' &&
      c.line - lastLine <= 2 &&
      indentOf(c.text) > indentOf(current.head.text);
    if (under) {
      current!.parts.push({ ...c, kind: 'detail' });
    } else if (HEADLINES.has(c.kind)) {
      // A headline takes the lines printed before it for it (a traceback), if close.
      const last = pendingNext[pendingNext.length - 1];
      current = { head: c, parts: last && c.line - last.line <= ATTACH_GAP ? pendingNext : [] };
      pendingNext = [];
      out.push(current);
    } else if (c.attach === 'next') {
      if (pendingNext.length && c.line - pendingNext[pendingNext.length - 1]!.line > ATTACH_GAP) pendingNext = [];
      pendingNext.push(c);
    } else if (current && (c.line - lastLine <= ATTACH_GAP || (FAR_PARTS.has(c.kind) && c.line - lastLine <= FAR_GAP))) {
      current.parts.push(c);
    } else {
      current = undefined;
    }
    lastLine = c.line;
  }
  return out;
}

/** A detail that says nothing by itself: punctuation (`E   {`), pytest's connecting lines. */
const HOLLOW = /^(E\s+)?([\W_]{0,3}|Omitting \d+ identical items.*|Full diff:|Use -v+ to get .*)$/;

function indentOf(text: string): number {
  return text.length - text.trimStart().length;
}

/**
 * The lines of one failure to keep, most needed first: the headline, what it compared,
 * where it happened (its own frames, nearest the headline: the innermost, whichever way
 * the runtime prints), then the diff.
 */
function failureLines(f: Failure): Candidate[] {
  const details = f.parts.filter((p) => (p.kind === 'detail' || p.kind === 'error') && !HOLLOW.test(p.text.trim()));
  // Nearest the headline or a detail (a sanitizer's "allocated by thread T0 here:" has a stack of its own).
  const anchors = [f.head, ...details].map((a) => a.line);
  const distance = (c: Candidate) => Math.min(...anchors.map((a) => Math.abs(a - c.line)));
  const frames = f.parts.filter((p) => p.kind === 'frame' && !p.library && !p.text.startsWith('Traceback'));
  frames.sort((a, b) => distance(a) - distance(b) || a.line - b.line);
  const locations = f.parts.filter((p) => p.kind === 'location');
  // pytest's E lines carry the diff already; the summary's copy below its FAILED line is not needed.
  const diff =
    (f.head.kind === 'test' || details.length) && !details.some((d) => d.family === 'pytest')
      ? f.parts.filter((p) => p.kind === 'diff')
      : [];
  return [f.head, ...details.slice(0, MAX_DETAILS), ...locations.slice(0, 2), ...frames.slice(0, MAX_FRAMES), ...diff.slice(0, MAX_DIFF)];
}

/** Clips a long line so that what made it a key line stays in. */
export function clipLine(raw: string, at = 0): string {
  const lead = raw.length - raw.trimStart().length;
  const line = raw.trim();
  const pos = Math.max(0, at - lead);
  if (line.length <= MAX_LINE_CHARS) return line;
  // What made it a key line is near the start: keep the start and the end (where a
  // message often says its cause: `...with the reason "quota exceeded"`).
  if (pos < CLIP_HEAD - 40) return `${sliceText(line, 0, CLIP_HEAD)}…${sliceText(line, line.length - (MAX_LINE_CHARS - CLIP_HEAD))}`;
  const start = Math.min(pos - 40, line.length - MAX_LINE_CHARS);
  return `…${sliceText(line, start, start + MAX_LINE_CHARS)}${start + MAX_LINE_CHARS < line.length ? '…' : ''}`;
}

/**
 * Chooses the key lines from what a collector saw. In order of need: the final verdict;
 * the first and the last failure, then the ones between; warnings, then details with no
 * headline, then loose error words only when a failed run has nothing better; on a death by a signal, the last lines before it.
 * On a successful run, only real error headlines count: never a warning, never a keyword.
 */
export function selectKeyLines(
  collector: KeyLineCollector,
  options: { exitCode: number; signal?: boolean; budget?: KeyLineBudget; fallback?: boolean },
): string[] {
  const budget = options.budget ?? KEY_LINE_BUDGET;
  const failed = options.exitCode !== 0;
  const candidates = collector.candidates();
  const all = mergeSameTest(failures(candidates));
  const chosen = new Map<number, string>();
  const texts = new Set<string>();
  let chars = 0;
  /** Takes all the lines or none; a repeated line is taken once. */
  const take = (lines: Array<{ line: number; text: string; at?: number }>): boolean => {
    const fresh = new Map<number, string>();
    const seen = new Set<string>();
    for (const l of lines) {
      const t = clipLine(l.text, l.at);
      if (texts.has(t) || seen.has(t) || chosen.has(l.line)) continue;
      seen.add(t);
      fresh.set(l.line, t);
    }
    const cost = [...fresh.values()].reduce((s, t) => s + t.length + 1, 0);
    if (chosen.size + fresh.size > budget.lines || chars + cost > budget.chars) return false;
    for (const [line, t] of fresh) {
      chosen.set(line, t);
      texts.add(t);
    }
    chars += cost;
    return true;
  };
  const verdicts = all.filter((f) => f.head.kind === 'verdict');
  const errors = all.filter((f) => f.head.kind === 'error' || f.head.kind === 'test');
  // A successful run: a verdict only counts beside a real error.
  if (failed || errors.length) take(verdicts.slice(-MAX_VERDICTS).map((f) => f.head));
  const taken = { verdicts: chosen.size };
  // Failures that say what and where before bare names (a runner's list of failed tests
  // repeats the names its failure reports give); among each, the first, the last, then the rest.
  const edgesFirst = (fs: Failure[]) => (fs.length <= 2 ? fs : [fs[0]!, fs[fs.length - 1]!, ...fs.slice(1, -1)]);
  const own = errors.filter((f) => !f.head.library);
  const order = [
    ...edgesFirst(own.filter((f) => f.parts.length > 0)),
    ...edgesFirst(own.filter((f) => f.parts.length === 0)),
    ...errors.filter((f) => f.head.library),
  ];
  for (const f of order) {
    // Whole if it fits; else as many of its lines as fit, the most needed first.
    const lines = failureLines(f);
    if (!take(lines)) for (const l of lines) take([l]);
  }
  // A failed run whose output has no failure in a known format (a verdict alone, or
  // nothing): its warnings (`--max-warnings 0`), else details with no headline, else its
  // loose error words, the last ones first (the cause is usually just before the end);
  // else its last lines.
  if (failed && chosen.size === taken.verdicts && options.fallback !== false) {
    const before = chosen.size;
    for (const kind of ['warning', 'detail', 'mention'] as const) {
      const of = candidates.filter((x) => x.kind === kind);
      const ordered =
        kind === 'mention' ? [...of.slice(-FALLBACK_LAST).reverse(), ...of.slice(0, FALLBACK_FIRST)] : of.slice(0, FALLBACK_LINES);
      for (const c of ordered) take([c]);
      if (chosen.size > before) break;
    }
    if (chosen.size === 0) take(collector.last());
  }
  if (options.signal) take(collector.last());
  return [...chosen.entries()].sort((a, b) => a[0] - b[0]).map(([, t]) => t);
}

/** Key lines of a text (a command's output as captured). */
export function keyLines(
  text: string,
  options: { exitCode?: number; signal?: boolean; budget?: KeyLineBudget; fallback?: boolean } = {},
): string[] {
  const collector = new KeyLineCollector();
  collector.pushText(text);
  return selectKeyLines(collector, { exitCode: options.exitCode ?? 1, ...options });
}

/**
 * How much of a long log the scan reads: all of it up to this size; else its first and
 * its last half of this.
 */
const LOG_SCAN_BYTES = 16 * 1024 * 1024;
const SCAN_CHUNK_BYTES = 1024 * 1024;

export interface LogScan {
  collector: KeyLineCollector;
  /** Bytes read, and the log's size: less read means the middle of a huge log was not. */
  scannedBytes: number;
  totalBytes: number;
}

/**
 * Classifies every line of a command's full log (for output whose middle was cut from
 * what the command's answer holds): the text lines, binary ones passed over, so an error
 * beside a gzip member is still found. Reads at most `maxBytes`, the start and the end of
 * a bigger log (measured: 0.26 s for 16 MiB of 80-byte log lines, 0.47 s when every line
 * is an error, 1.1 s for 16 MiB of 2-byte lines). Undefined when the log cannot be read.
 */
export async function scanLog(logPath: string, options: { maxBytes?: number } = {}): Promise<LogScan | undefined> {
  const maxBytes = options.maxBytes ?? LOG_SCAN_BYTES;
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
            [0, Math.floor(maxBytes / 2)],
            [totalBytes - Math.floor(maxBytes / 2), totalBytes],
          ];
    const collector = new KeyLineCollector();
    let scannedBytes = 0;
    const buf = Buffer.allocUnsafe(SCAN_CHUNK_BYTES);
    for (const [from, to] of ranges) {
      let carry = '';
      const decoder = new StringDecoder('utf8');
      // A range that starts after a line's start has only the end of that line: skipped.
      let skipFirst = false;
      if (from > 0) {
        const { bytesRead } = await file.read(buf, 0, 1, from - 1);
        skipFirst = bytesRead === 1 && buf[0] !== 0x0a;
        collector.push('[... the middle of the log was not read ...]');
      }
      for (let pos = from; pos < to;) {
        const { bytesRead } = await file.read(buf, 0, Math.min(SCAN_CHUNK_BYTES, to - pos), pos);
        if (bytesRead === 0) break;
        pos += bytesRead;
        scannedBytes += bytesRead;
        let text = carry + decoder.write(buf.subarray(0, bytesRead));
        const endsLog = pos >= to && to >= totalBytes;
        if (endsLog) text += decoder.end();
        const end = endsLog ? text.length : text.lastIndexOf('\n') + 1;
        // A line longer than a chunk is classified by its last 64 KiB.
        carry = text.slice(end).slice(-65536);
        const lines = text.slice(0, end).split('\n');
        if (end > 0 && text[end - 1] === '\n') lines.pop();
        if (skipFirst && end === 0) continue;
        if (skipFirst) {
          lines.shift();
          skipFirst = false;
        }
        for (const line of lines) collector.push(line);
      }
      // A range that ends before the log does ends inside a line: that part is not read.
      if (carry && !skipFirst && to >= totalBytes) collector.push(carry);
    }
    return { collector, scannedBytes, totalBytes };
  } catch (e) {
    swallowed(`scanning ${logPath}`, e);
    return undefined;
  } finally {
    await file.close().catch((e: unknown) => swallowed(`closing ${logPath}`, e));
  }
}
