/**
 * renderHistory: what the cheap model sees of the commands run so far. The last few
 * verbatim (output clipped in the middle, exit code and flags), the ones before as one
 * line each (with the first error line of a failure), everything older as one count.
 */
import { HISTORY_LIMITS, historyEntry, renderHistory, type HistoryEntry } from '../../../src/task/task-history.js';
import type { ExecResult } from '../../../src/commands/exec-types.js';
import { execResultOf } from '../helpers.js';

function entry(step: number, over: Partial<HistoryEntry> = {}): HistoryEntry {
  return {
    step,
    command: `echo step-${step}`,
    exitCode: 0,
    timedOut: false,
    oomKilled: false,
    canceled: false,
    output: `output of step ${step}\n`,
    bytes: 20,
    ...over,
  };
}

function execResult(over: Partial<ExecResult> = {}): ExecResult {
  return execResultOf({
    command: 'make',
    exitCode: 2,
    stdout: 'building\n',
    stderr: 'make: *** [all] Error 2\n',
    bytes: { stdout: 9, stderr: 24 },
    lines: { stdout: 1, stderr: 1 },
    durationMs: 12,
    logPath: '/tmp/x.log',
    ...over,
  });
}

/** `n` entries of ~450 characters of output each; every even one fails with two error lines. */
function longRun(n: number, over: (i: number) => Partial<HistoryEntry> = () => ({})): HistoryEntry[] {
  return Array.from({ length: n }, (_, k) => {
    const i = k + 1;
    const fails = i % 2 === 0;
    const body = Array.from({ length: 9 }, (_, l) => `step ${i} line ${l}: lorem ipsum dolor sit amet`).join('\n');
    return entry(i, {
      command: `make target-${i}`,
      exitCode: fails ? 2 : 0,
      output: fails ? `${body}\ncompile.c:${i}:1: error: step ${i} broke\ncompile.c:${i}:9: error: second error\n` : `${body}\n`,
      ...over(i),
    });
  });
}

const COUNT_LINE = /^\((\d+) earlier commands not shown: (\d+) succeeded, (\d+) failed\b.*\)$/;

/** Splits a rendering into its count line, one-line (condensed) entries and full entries (with output). */
function parse(text: string): {
  count?: RegExpExecArray;
  condensed: Array<{ step: number; line: string }>;
  full: Array<{ step: number; text: string }>;
} {
  const lines = text.split('\n');
  const count = COUNT_LINE.exec(lines[0] ?? '') ?? undefined;
  const condensed: Array<{ step: number; line: string }> = [];
  const full: Array<{ step: number; text: string }> = [];
  for (let i = count ? 1 : 0; i < lines.length; i++) {
    const line = lines[i]!;
    const head = /^#(\d+) \$ /.exec(line);
    if (!head) throw new Error(`line ${i} is not the start of an entry: ${JSON.stringify(line)}\n${text}`);
    // A one-line entry is followed directly by the next entry (outputs in these tests never start with '#').
    if (/^#\d+ \$ /.test(lines[i + 1] ?? '')) {
      condensed.push({ step: Number(head[1]), line });
      continue;
    }
    const start = i;
    while (i + 1 < lines.length && !/^-> exit \d+/.test(lines[i]!)) i++;
    full.push({ step: Number(head[1]), text: lines.slice(start, i + 1).join('\n') });
  }
  return { ...(count ? { count } : {}), condensed, full };
}

describe('renderHistory', () => {
  test('no commands yet', () => {
    expect(renderHistory([])).toBe('(no commands run yet)');
  });

  test('recent commands verbatim, each with its output and exit code; empty output says so', () => {
    const text = renderHistory([
      entry(1, { command: 'ls -la', output: 'total 0\nfile-a\n' }),
      entry(2, { command: 'cat nope', exitCode: 1, output: '[stderr]\ncat: nope: No such file or directory\n' }),
      entry(3, { command: 'true', output: '' }),
    ]);
    expect(text).toBe(
      [
        '#1 $ ls -la\ntotal 0\nfile-a\n-> exit 0',
        '#2 $ cat nope\n[stderr]\ncat: nope: No such file or directory\n-> exit 1',
        '#3 $ true\n(no output)\n-> exit 0',
      ].join('\n'),
    );
  });

  test('recent commands show TIMED OUT, OOM-KILLED and CANCELED flags and the reason', () => {
    const text = renderHistory([
      entry(1, {
        command: 'sleep 100',
        exitCode: 124,
        timedOut: true,
        output: '',
        reason: 'timed out after 1000 ms; its process tree was killed',
      }),
      entry(2, {
        command: 'python3 hog.py',
        exitCode: 137,
        oomKilled: true,
        output: 'allocating\n',
        reason: 'killed by the memory limit (64 MiB)',
      }),
      entry(3, { command: 'sleep 5', exitCode: 137, canceled: true, output: '' }),
    ]);
    expect(text).toContain('#1 $ sleep 100\n(no output)\n-> exit 124 TIMED OUT (timed out after 1000 ms; its process tree was killed)');
    expect(text).toContain('#2 $ python3 hog.py\nallocating\n-> exit 137 OOM-KILLED (killed by the memory limit (64 MiB))');
    expect(text).toContain('#3 $ sleep 5\n(no output)\n-> exit 137 CANCELED');
  });

  test('a long output is clipped in the middle: head and tail kept verbatim, the cut counted exactly', () => {
    const output = Array.from({ length: 2000 }, (_, i) => `row ${String(i).padStart(4, '0')}`).join('\n'); // ~18 KB
    const text = renderHistory([entry(1, { command: 'big', output })]);
    const m = /^#1 \$ big\n([\s\S]*)\n\[\.\.\. (\d+) characters cut \.\.\.\]\n([\s\S]*)\n-> exit 0$/.exec(text);
    expect(m).not.toBeNull();
    const [, head, cut, tail] = m!;
    expect(output.startsWith(head!)).toBe(true);
    expect(output.endsWith(tail!)).toBe(true);
    expect(head!.length + Number(cut) + tail!.length).toBe(output.length);
    expect(head!.length).toBeGreaterThan(200);
    expect(tail!.length).toBeGreaterThan(200);
    expect(text).toContain('row 0000');
    expect(text).toContain('row 1999');
    expect(text).not.toContain('row 1000');
    expect(text.length).toBeLessThan(5_000);
  });

  test('a 1000-character output is shown whole', () => {
    const output = 'x'.repeat(1000);
    expect(renderHistory([entry(1, { output })])).toBe(`#1 $ echo step-1\n${output}\n-> exit 0`);
  });

  test('a long run: earliest as one count, then older ones condensed (first error line), then the newest verbatim', () => {
    const entries = longRun(30, (i) => (i === 29 ? { command: 'sleep 99', exitCode: 124, timedOut: true, output: '' } : {}));
    const text = renderHistory(entries);
    const { count, condensed, full } = parse(text);

    // Every step shown at most once, in order, and together with the count they cover 1..30.
    const shown = [...condensed.map((c) => c.step), ...full.map((f) => f.step)];
    expect(count).toBeDefined();
    const hidden = Number(count![1]);
    expect(shown).toEqual(Array.from({ length: 30 - hidden }, (_, k) => hidden + 1 + k));
    const hiddenFailed = entries.slice(0, hidden).filter((e) => e.exitCode !== 0).length;
    expect([Number(count![2]), Number(count![3])]).toEqual([hidden - hiddenFailed, hiddenFailed]);
    for (let i = 1; i <= hidden; i++) expect(text).not.toContain(`#${i} $`);

    // Condensed entries come before the full ones, with no output, at most 140 characters each.
    expect(condensed.length).toBeGreaterThan(0);
    expect(Math.max(...condensed.map((c) => c.step))).toBeLessThan(Math.min(...full.map((f) => f.step)));
    for (const c of condensed) {
      expect(c.line.length).toBeLessThanOrEqual(140);
      expect(c.line).not.toContain('lorem ipsum');
      if (c.step % 2 === 0)
        expect(c.line).toBe(`#${c.step} $ make target-${c.step} -> exit 2: compile.c:${c.step}:1: error: step ${c.step} broke`);
      else expect(c.line).toBe(`#${c.step} $ make target-${c.step} -> exit 0`);
    }
    expect(condensed.some((c) => c.step % 2 === 0)).toBe(true);

    // The newest ones in full, with their output and status.
    expect(full.map((f) => f.step)).toContain(30);
    expect(full.find((f) => f.step === 30)!.text).toBe(`#30 $ make target-30\n${entries[29]!.output.replace(/\n$/, '')}\n-> exit 2`);
    expect(full.find((f) => f.step === 29)!.text).toBe('#29 $ sleep 99\n(no output)\n-> exit 124 TIMED OUT');
  });

  test('a condensed line stays within 140 characters and keeps its exit status and error, however long the command', () => {
    // Older steps with long two-line commands (odd ones fail); the newest with a big output,
    // so the older ones get one line each.
    const entries = Array.from({ length: 10 }, (_, k) =>
      k < 9
        ? entry(k + 1, {
            command: `echo ${String(k + 1).padStart(2, '0')} ${'a'.repeat(200)}\n  && true`,
            exitCode: k % 2 === 0 ? 1 : 0,
            output: k % 2 === 0 ? `error: step ${k + 1} failed\n` : 'ok\n',
          })
        : entry(10, { command: 'big', output: 'b'.repeat(2790) }),
    );
    const { condensed } = parse(renderHistory(entries));
    expect(condensed.length).toBeGreaterThan(0);
    for (const c of condensed) {
      expect(c.line.length).toBeLessThanOrEqual(140);
      expect(c.line).not.toContain('\n');
      expect(c.line.startsWith(`#${c.step} $ echo ${String(c.step).padStart(2, '0')} aaaa`)).toBe(true);
      // The model must still see how the step ended: cut the command, not the status.
      expect(c.line).toMatch(c.step % 2 === 1 ? new RegExp(`-> exit 1: error: step ${c.step} failed$`) : /-> exit 0$/);
    }
  });

  test('its size stops growing: never past the budget, and 20, 40, 80 and 160 commands render to (nearly) the same size', () => {
    const size = (n: number) => renderHistory(longRun(n)).length;
    // The budget plus the one count line of what is not shown.
    for (const n of [5, 10, 15, 20, 40, 80, 160])
      expect({ n, within: size(n) <= HISTORY_LIMITS.budgetChars + 150 }).toEqual({ n, within: true });
    const base = size(20);
    for (const n of [40, 80, 160]) {
      // Only the digits of step numbers and of the count, and where a one-line entry breaks, may differ.
      expect({ n, diff: Math.abs(size(n) - base) <= 80 }).toEqual({ n, diff: true });
    }
  });
});

describe('historyEntry', () => {
  test('keeps the command, exit, flags and reason, and merges stdout and stderr', () => {
    const e = historyEntry(4, execResult({ timedOut: true, exitCode: 124, reason: 'timed out after 5 ms' }));
    expect(e).toEqual({
      step: 4,
      command: 'make',
      exitCode: 124,
      timedOut: true,
      oomKilled: false,
      canceled: false,
      reason: 'timed out after 5 ms',
      output: 'building\n[stderr]\nmake: *** [all] Error 2\n',
      bytes: 33,
    });
    expect('reason' in historyEntry(1, execResult())).toBe(false);
  });
});
