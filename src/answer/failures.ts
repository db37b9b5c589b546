import type { LineClass } from './line-rules.js';

/**
 * Failures: the classified lines of an output grouped into a headline and what belongs to
 * it, and the lines of each to keep, most needed first (key-lines.ts chooses among them).
 */

/** One classified line and where it was in the output. */
export interface Candidate extends LineClass {
  line: number;
  text: string;
}

/** A failure: its headline and the lines that belong to it. */
export interface Failure {
  head: Candidate;
  parts: Candidate[];
}

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

const HEADLINES = new Set(['error', 'test', 'verdict']);

/**
 * The test a headline names, when runners name it twice (pytest's `___ test_x ___` and its
 * `FAILED path::test_x - ...`; unittest's `test_x (...) ... FAIL` and `FAIL: test_x (...)`;
 * cargo's `test m::x ... FAILED` and `---- m::x stdout ----`).
 */
function testName(text: string): { name: string; form: number } | undefined {
  for (const [form, re] of TEST_NAMES.entries()) {
    const m = re.exec(text);
    if (m) return { name: m[1]!, form };
  }
  return undefined;
}

const TEST_NAMES = [
  /^_{3,} (?:ERROR at (?:setup|teardown) of |ERROR collecting )?(?:[\w.]+\.)?(\S.{0,300}?) _{3,}$/,
  /^(?:FAILED|ERROR) [^\s:]*::(?:\w+::)?(.{1,300}?)(?: - .*)?$/,
  // unittest names a test with its class: `test_basic (tests.LastTests.test_basic)`.
  /^(?:FAIL|ERROR): (\S+ \([^)\s]+\))/,
  /^(\S+ \(\S+\)) \.\.\. (?:FAIL|ERROR)$/,
  /^test (\S+) \.\.\. FAILED$/,
  /^---- (\S+) stdout ----$/,
];

/** Failures of the same test become one: the later headline, the parts of both. */
export function mergeSameTest(fs: Failure[]): Failure[] {
  const byName = new Map<string, { f: Failure; form: number }>();
  const out: Failure[] = [];
  for (const f of fs) {
    const test = f.head.kind === 'test' ? testName(f.head.text) : undefined;
    const same = test === undefined ? undefined : byName.get(test.name);
    // Two reports of one form are two failures (unittest's subtests), not one named twice.
    if (!same || same.form === test!.form) {
      if (test !== undefined) byName.set(test.name, { f, form: test.form });
      out.push(f);
      continue;
    }
    // The later one: the report after the progress line, the summary line after the report.
    same.f.head = f.head;
    same.f.parts.push(...f.parts);
  }
  return out;
}

/**
 * go test -v names the test whose output follows (`=== RUN`, `=== CONT`, `=== NAME`) and
 * reports it later as `--- FAIL: name`: after its subtests, or after the tests run beside
 * it, with other tests' starts between.
 */
const STARTED_TEST = /^=== (?:RUN|CONT|NAME) +(\S+)/;
const FAILED_TEST = /^\s*--- FAIL: (\S+)/;

/** Groups candidates into failures: a headline and the details, frames and locations around it. */
export function failures(cands: Candidate[]): Failure[] {
  const out: Failure[] = [];
  let pendingNext: Candidate[] = [];
  let current: Failure | undefined;
  let lastLine = -Infinity;
  /** After a test's start and before a headline: lines belong to the headline that ends it. */
  let started = false;
  /** The test named by the last start, and the lines each named test printed, kept for its `--- FAIL`. */
  let startedName: string | undefined;
  const printedBy = new Map<string, Candidate[]>();
  const keepPrinted = () => {
    if (startedName === undefined || !pendingNext.length) return;
    printedBy.set(startedName, [...(printedBy.get(startedName) ?? []), ...pendingNext]);
  };
  for (const c of cands) {
    if (c.kind === 'start') {
      if (started && !current) keepPrinted();
      current = undefined;
      pendingNext = [];
      started = true;
      startedName = STARTED_TEST.exec(c.text)?.[1];
      continue;
    }
    // No part of a failure (a failed run with nothing better takes loose words alone; a passing one, its verdict).
    if (c.kind === 'mention' || c.kind === 'pass') continue;
    if (c.kind === 'warning') {
      // Neither a failure nor a part of one: what follows a warning (its --> location) is its own.
      current = undefined;
      continue;
    }
    // An exception printed just below a failing test's name, indented deeper, is that test's
    // error (node --test's spec reporter, jest), not a failure of its own.
    // So is an exception a test runner prints in the test's report, before the next
    // headline (unittest's `ERROR: test_x` then its traceback; minitest's and PHPUnit's
    // numbered reports), with the frames printed before it.
    const under =
      current &&
      current.head.kind === 'test' &&
      c.kind === 'error' &&
      ((c.line - lastLine <= 2 && indentOf(c.text) > indentOf(current.head.text)) || c.line - current.head.line <= FAR_GAP);
    if (under) {
      const last = pendingNext[pendingNext.length - 1];
      if (last && c.line - last.line <= ATTACH_GAP) current!.parts.push(...pendingNext);
      pendingNext = [];
      current!.parts.push({ ...c, kind: 'detail' });
    } else if (HEADLINES.has(c.kind)) {
      // A headline takes the lines printed before it for it (a traceback), if close; a
      // test's `--- FAIL` takes what the test printed since its start, however far.
      const last = pendingNext[pendingNext.length - 1];
      let parts = last && c.line - last.line <= ATTACH_GAP ? pendingNext : [];
      const failed = c.kind === 'test' ? FAILED_TEST.exec(c.text)?.[1] : undefined;
      if (failed !== undefined && started && !current) {
        keepPrinted();
        parts = printedBy.get(failed) ?? [];
        startedName = undefined;
      } else if (failed !== undefined && printedBy.has(failed)) {
        parts = [...printedBy.get(failed)!, ...parts];
      }
      if (failed !== undefined) printedBy.delete(failed);
      current = { head: c, parts };
      pendingNext = [];
      started = false;
      out.push(current);
    } else if (c.attach === 'next' || (started && !current)) {
      // Under a named start every line is the test's; elsewhere only those close to the next one.
      const named = started && !current && startedName !== undefined;
      if (!named && pendingNext.length && c.line - pendingNext[pendingNext.length - 1]!.line > ATTACH_GAP) pendingNext = [];
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

/** A label whose value is on the lines below it (doctest's `Expected:`, `Failed example:`). */
const LABEL = /^\s*[A-Z][a-z]*( [a-z]+){0,2}:$/;

function indentOf(text: string): number {
  return text.length - text.trimStart().length;
}

/**
 * The lines of one failure to keep, most needed first: `core`, the headline with its
 * test's name, what it compared and where; `all`, that and the rest of what it compared,
 * its own frames (nearest the headline, the innermost whichever way the runtime prints,
 * and the outermost: where the test called in), then the diff.
 */
export function failureLines(f: Failure): { core: Candidate[]; main: Candidate[]; all: Candidate[] } {
  const titles = f.parts.filter((p) => p.family === 'title');
  const details = f.parts.filter((p) => (p.kind === 'detail' || p.kind === 'error') && p.family !== 'title' && !HOLLOW.test(p.text.trim()));
  // Nearest the error it ended in (a Python traceback's last frame, a Go or JavaScript
  // stack's first), else the headline; a sanitizer's "allocated by thread T0 here:" has a stack of its own.
  const anchors = (details.length ? details : [f.head]).map((a) => a.line);
  const distance = (c: Candidate) => Math.min(...anchors.map((a) => Math.abs(a - c.line)));
  const own = f.parts.filter((p) => p.kind === 'frame' && !p.library && !p.text.startsWith('Traceback'));
  own.sort((a, b) => distance(a) - distance(b) || a.line - b.line);
  const frames = own.length > MAX_FRAMES + 1 ? [...own.slice(0, MAX_FRAMES), own[own.length - 1]!] : own;
  const locations = f.parts.filter((p) => p.kind === 'location');
  // pytest's E lines carry the diff already; the summary's copy below its FAILED line is not needed.
  const diff =
    (f.head.kind === 'test' || details.length) && !details.some((d) => d.family === 'pytest')
      ? f.parts.filter((p) => p.kind === 'diff')
      : [];
  const where = locations[0] ?? frames[0];
  const compared = details.slice(0, MAX_DETAILS);
  // What it compared comes in pairs (expected and actual, left and right), and it ends in
  // what it got; a label whose value is on the lines below (`Expected:`) waits for `all`.
  const values = details.filter((d) => !LABEL.test(d.text));
  const core = [...values.slice(0, 2), ...values.slice(2).slice(-1)];
  return {
    core: [f.head, ...titles, ...core, ...(where ? [where] : [])],
    main: [f.head, ...titles, ...compared, ...locations.slice(0, 2), ...frames.slice(0, 1), ...diff.slice(0, MAX_DIFF)],
    all: [f.head, ...titles, ...compared, ...locations.slice(0, 2), ...frames, ...diff.slice(0, MAX_DIFF)],
  };
}

/**
 * What a failure says, to tell a new cause from one already shown: its last detail (the
 * error it ended in, what it got), without the test's own name and with numbers as `#`.
 */
function cause(f: Failure): string {
  const details = f.parts.filter((p) => (p.kind === 'detail' || p.kind === 'error') && p.family !== 'title');
  const last = details[details.length - 1];
  if (!last) return `${f.head.family}:`;
  const name = new Set(f.head.text.split(/\W+/));
  return last.text
    .split(/\W+/)
    .filter((t) => t && !name.has(t))
    .map((t) => t.replace(/\d+/g, '#'))
    .join(' ');
}

/**
 * The first failure, the last, then those with a cause not shown yet, then the rest
 * (`repeat`: its cause was shown by one before it).
 */
export function byNeed(fs: Failure[]): Array<{ f: Failure; repeat: boolean }> {
  const edges = fs.length <= 2 ? fs : [fs[0]!, fs[fs.length - 1]!];
  const seen = new Set(edges.map(cause));
  const fresh: Failure[] = [];
  const repeats: Failure[] = [];
  for (const f of fs.slice(1, -1)) {
    const c = cause(f);
    (seen.has(c) ? repeats : fresh).push(f);
    seen.add(c);
  }
  return [...edges, ...fresh].map((f) => ({ f, repeat: false })).concat(repeats.map((f) => ({ f, repeat: true })));
}
