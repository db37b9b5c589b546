import { sliceText } from '../display-text.js';
import { isBinaryLine } from '../capture/stream-window.js';
import { classifyLine, type LineClass } from './line-rules.js';
import { byNeed, failureLines, failures, mergeSameTest, type Candidate } from './failures.js';

/**
 * Key lines: the lines of a command's output a developer needs to fix a failure, kept
 * verbatim beside a summary. Every line is classified (line-rules.ts); the selection keeps
 * the final verdict, then each failure whole (its headline, what it compared, where it
 * happened in the project's own code), errors before warnings, within a budget.
 */

export interface KeyLineBudget {
  /** At most this many lines. */
  lines: number;
  /** At most this many characters, all lines together. */
  chars: number;
}

export const KEY_LINE_BUDGET: Readonly<KeyLineBudget> = { lines: 28, chars: 1500 };

/** What a key line costs the model, which reads it as a JSON string in a list: quotes, escapes, a comma. */
export function keyLineCost(text: string): number {
  return JSON.stringify(text).length + 1;
}
/** Longer lines are clipped, around what made them key lines. */
export const MAX_LINE_CHARS = 200;
/** Of a clipped line whose key part is at its start: this much of the start, the rest of the end. */
const CLIP_HEAD = 120;
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
  /**
   * A line continued below: its indent, how many of the non-blank lines below continue it,
   * whether they must be indented deeper, and how many have been seen.
   */
  private cont: { indent: number; lines: number; deeper: boolean; seen: number; kind: 'detail' | 'title' } | undefined;
  /** Lines passed over because they were binary. */
  binaryLines = 0;

  push(raw: string): void {
    const n = this.lineNo++;
    // Colour codes (tsc and maven print them even when not on a terminal) are no part of the text.
    let text = (raw.includes('\x1b') ? raw.replace(ANSI_ESCAPE, '') : raw).trimEnd();
    // A margin of box drawing (PHPUnit's testdox: `   │ Failed asserting that ...`) is no part of the text.
    if (text.includes('│')) text = text.replace(BOX_MARGIN, '$1');
    if (text.length === 0 || text.startsWith('[... ') || text.startsWith('[binary')) return;
    if (isBinaryLine(text)) {
      this.binaryLines++;
      // A text line glued to the end of binary data (`cat` of a gzip member, then a log
      // whose first line is the error) is read from where the binary bytes end.
      const tail = textAfterBinary(text);
      if (tail === undefined) return;
      text = tail;
    }
    this.lastLines[this.lastAt++ % LAST_LINES] = { line: n, text };
    // A line that ends in a colon continues below: a headline on its next line (rust's
    // panic message, minitest's test name), a detail on up to three lines indented deeper
    // (`expected:` in TAP's YAML). A mocha headline's title goes on below it, indented deeper.
    const indent = text.length - text.trimStart().length;
    const classified = classifyLine(text);
    const cont = this.cont;
    // A loose error word in the line below a headline (`LoadError:`, then `cannot load such
    // file -- x`) does not make it a line of its own: it is that headline's message.
    const own = classified?.kind === 'mention' && cont && cont.seen < cont.lines && !cont.deeper ? undefined : classified;
    const continues = !own && cont && cont.seen < cont.lines && (!cont.deeper || indent > cont.indent);
    const c = own ?? (continues ? (cont.kind === 'title' ? TITLE : CONTINUATION) : undefined);
    if (continues) cont.seen++;
    if (own && text.endsWith(':') && own.kind !== 'frame') {
      const headline = own.kind === 'error' || own.kind === 'test';
      this.cont = { indent, lines: headline ? 1 : 3, deeper: !headline, seen: 0, kind: own.kind === 'test' ? 'title' : 'detail' };
    } else if (own?.title) this.cont = { indent, lines: own.title, deeper: true, seen: 0, kind: 'title' };
    else if (!continues) this.cont = undefined;
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
/** A line of a test's name, below its headline: part of the headline. */
const TITLE: LineClass = { kind: 'detail', family: 'title', attach: 'prev', library: false, at: 0 };

const BOX_MARGIN = /^(\s*)│ ?/;

/** Text this long after the last binary byte of a line is a line of its own. */
const MIN_GLUED_TEXT = 16;
// eslint-disable-next-line no-control-regex -- what is not text in a line that is binary
const NOT_TEXT = /[\x00-\x08\x0b\x0c\x0e-\x1a\x1c-\x1f\x7f\ufffd]/g;

/** The text after the last binary byte of a line, when it is long enough to be a line of text. */
function textAfterBinary(line: string): string | undefined {
  let end = -1;
  for (const m of line.matchAll(NOT_TEXT)) end = m.index + m[0].length;
  const tail = end < 0 ? '' : line.slice(end);
  // Printable, and a run of words, not a stretch of compressed bytes that happens to be printable.
  return tail.length >= MIN_GLUED_TEXT && /^[\x20-\x7e\t]+$/.test(tail) && /[A-Za-z]{3,}[^\n]*\s/.test(tail) ? tail : undefined;
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
    const cost = [...fresh.values()].reduce((s, t) => s + keyLineCost(t), 0);
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
  // A successful run: a verdict only counts beside a real error; else its passing verdict is the one line kept.
  if (failed || errors.length) take(verdicts.slice(-MAX_VERDICTS).map((f) => f.head));
  else take(candidates.filter((c) => c.kind === 'pass').slice(-1));
  const taken = { verdicts: chosen.size };
  // Failures that say what and where before bare names (a runner's list of failed tests
  // repeats the names its failure reports give); among each, the first, the last, those
  // with a cause not shown yet, then the rest.
  const own = errors.filter((f) => !f.head.library);
  const order = [
    ...byNeed(own.filter((f) => f.parts.length > 0)),
    ...byNeed(own.filter((f) => f.parts.length === 0)),
    ...errors.filter((f) => f.head.library).map((f) => ({ f, repeat: false })),
  ];
  // The first failure with all it compared and its diff; then each failure its headline,
  // what it compared and where, before any second frame; then each one whole if it fits,
  // else as many of its lines as fit, the most needed first.
  // A failure whose cause one before it showed: its name first, the rest with the others.
  const lines = order.map(({ f, repeat }) => ({
    ...failureLines(f),
    name: [f.head, ...f.parts.filter((p) => p.family === 'title')],
    repeat,
  }));
  const rounds = [lines.slice(0, 1).map((l) => l.main), lines.map((l) => (l.repeat ? l.name : l.core)), lines.map((l) => l.all)];
  for (const round of rounds) for (const l of round) if (!take(l)) for (const one of l) take([one]);
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
