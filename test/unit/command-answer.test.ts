import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { buildCommandAnswer, extractiveSummary, keyLines, logKeyLines, type OutputSummarizer } from '../../src/answer/command-answer.js';
import { StreamWindow } from '../../src/capture/stream-window.js';
import type { ExecResult } from '../../src/sandbox/exec-types.js';
import { removeTempDirs, tempDir } from './helpers.js';

afterEach(() => removeTempDirs());

/**
 * What sandbox.exec returns for `stdout` printed by a command: the text capped by a
 * StreamWindow as in a real run (16 KiB, 500 lines), and every byte in the log file.
 */
function execResult(stdout: string | Buffer, extra: Partial<ExecResult> = {}): ExecResult {
  const bytes = Buffer.isBuffer(stdout) ? stdout : Buffer.from(stdout);
  const logPath = join(tempDir(), '0001-cmd.log');
  writeFileSync(logPath, bytes);
  const window = new StreamWindow(16 * 1024, 500);
  window.push(bytes);
  const shown = window.render(logPath);
  return {
    command: 'cmd',
    exitCode: 0,
    stdout: shown.text,
    stderr: '',
    truncated: shown.truncated,
    timedOut: false,
    canceled: false,
    oomKilled: false,
    pidsLimitHit: false,
    diskLimitHit: false,
    bytes: { stdout: bytes.length, stderr: 0 },
    lines: { stdout: window.lines, stderr: 0 },
    durationMs: 5,
    logPath,
    ...extra,
  };
}

const progress = (from: number, to: number) =>
  Array.from({ length: to - from }, (_, i) => `step ${from + i}: ok, 12 items processed`).join('\n') + '\n';

/** A summarizer that records what it was given. */
function recordingSummarizer(reply = 'a summary') {
  const inputs: Array<Parameters<OutputSummarizer>[0]> = [];
  const summarizer: OutputSummarizer = async (input) => {
    inputs.push(input);
    return reply;
  };
  return { summarizer, inputs };
}

describe('keyLines', () => {
  test('keeps error-like lines in order, once each, clipped, and skips the omission marker', () => {
    const text = [
      'collecting 3 items',
      'ValueError: bad literal',
      'all good here',
      'ValueError: bad literal',
      'src/app.ts:12:5: error TS2322',
      '[... 100 bytes, about 3 lines omitted of 300 bytes, 9 lines; full output: /x.log ...]',
      `FAILED ${'x'.repeat(300)}`,
    ].join('\n');
    const lines = keyLines(text);
    expect(lines).toEqual(['ValueError: bad literal', 'src/app.ts:12:5: error TS2322', `FAILED ${'x'.repeat(193)}…`]);
    expect(keyLines(text, 1)).toEqual(['ValueError: bad literal']);
  });
});

describe('extractiveSummary', () => {
  test('counts, first lines and last lines', () => {
    const r = execResult(progress(0, 30));
    const s = extractiveSummary(r);
    expect(s.split('\n')[0]).toBe(`30 lines, ${r.bytes.stdout} bytes of output.`);
    expect(s).toContain('First lines:\nstep 0: ok');
    expect(s).toContain('Last lines:');
    expect(s.trimEnd().endsWith('step 29: ok, 12 items processed')).toBe(true);
  });
});

describe('buildCommandAnswer', () => {
  test('short output goes verbatim, with no summarizer call', async () => {
    const { summarizer, inputs } = recordingSummarizer();
    const a = await buildCommandAnswer(execResult('hello\n'), { summarizer });
    expect(a).toMatchObject({ exitCode: 0, summary: 'hello\n', summaryKind: 'verbatim', truncated: false });
    expect(a.keyLines).toBeUndefined();
    expect(inputs).toEqual([]);
  });

  test('long output: the summarizer writes the summary, error lines go verbatim beside it, flags carried', async () => {
    const { summarizer, inputs } = recordingSummarizer('  It failed.  ');
    const out = `${progress(0, 100)}AssertionError: expected 3\n`;
    const a = await buildCommandAnswer(execResult(out, { exitCode: 1, timedOut: true, reason: 'timed out after 5 ms' }), { summarizer });
    expect(a).toMatchObject({
      exitCode: 1,
      summary: 'It failed.',
      summaryKind: 'model',
      keyLines: ['AssertionError: expected 3'],
      timedOut: true,
      reason: 'timed out after 5 ms',
    });
    expect(inputs).toEqual([{ command: 'cmd', exitCode: 1, output: out, reason: 'timed out after 5 ms' }]);
  });

  test('a failing or missing summarizer falls back to the extractive summary; a long summary is cut', async () => {
    const out = progress(0, 100);
    const failing: OutputSummarizer = async () => {
      throw new Error('quota');
    };
    expect(await buildCommandAnswer(execResult(out), { summarizer: failing })).toMatchObject({ summaryKind: 'extractive' });
    expect(await buildCommandAnswer(execResult(out))).toMatchObject({ summaryKind: 'extractive' });
    const long = await buildCommandAnswer(execResult(out), { summarizer: recordingSummarizer('y'.repeat(2000)).summarizer });
    expect(long.summary).toBe(`${'y'.repeat(1500)}…`);
  });

  test('binary output is answered with its one-line note, not summarized', async () => {
    const { summarizer, inputs } = recordingSummarizer();
    const a = await buildCommandAnswer(execResult(Buffer.alloc(40_000, 0)), { summarizer });
    expect(a.summaryKind).toBe('verbatim');
    expect(a.summary).toMatch(/^\[binary output: 40000 bytes, not shown; exact bytes in .*0001-cmd\.log\]$/);
    expect(inputs).toEqual([]);
  });

  test('errors in the omitted middle of a long output reach keyLines and the summarizer, from the log', async () => {
    const out = `${progress(0, 2000)}Traceback (most recent call last):\nKeyError: 'price'\n${progress(2000, 4000)}done: 1 task failed\n`;
    const r = execResult(out, { exitCode: 1 });
    expect(r.truncated).toBe(true);
    expect(r.stdout).not.toContain('KeyError');
    const { summarizer, inputs } = recordingSummarizer();
    const a = await buildCommandAnswer(r, { summarizer });
    // What the captured tail shows first, then what only the log had.
    expect(a.keyLines).toEqual(['done: 1 task failed', 'Traceback (most recent call last):', "KeyError: 'price'"]);
    // The summarizer sees the capped output plus the middle's error lines, marked as such.
    expect(inputs[0]!.output.startsWith(r.stdout)).toBe(true);
    expect(inputs[0]!.output.slice(r.stdout.length)).toBe(
      "\n[error-like lines from the omitted middle of the output, from the full log:]\nTraceback (most recent call last):\nKeyError: 'price'\n",
    );
  });

  test("a captured error line that the log has inside another stream's line is not repeated", async () => {
    // stdout ended without a newline when stderr printed its line: in the log they share one.
    const r = execResult(`${progress(0, 3000)}filler abc`, { stderr: 'FAILED: 3 of 120 tests failed\n' });
    writeFileSync(r.logPath, `${progress(0, 3000)}filler abcFAILED: 3 of 120 tests failed\n`);
    const a = await buildCommandAnswer(r);
    expect(a.keyLines).toEqual(['FAILED: 3 of 120 tests failed']);
  });

  test('many error lines in the captured part still leave room for the middle', async () => {
    const errors = (tag: string) => Array.from({ length: 14 }, (_, i) => `Error: ${tag} ${i}`).join('\n') + '\n';
    const r = execResult(
      `${errors('head')}${progress(0, 3000)}Error: middle A\nError: middle B\nError: middle C\nError: middle D\nError: middle E\n${progress(3000, 6000)}`,
    );
    const a = await buildCommandAnswer(r);
    // Twelve in all: the first and the last four captured ones around four from the middle
    // (the first of them: the scan keeps the first eight new ones).
    expect(a.keyLines).toEqual([
      ...[0, 1, 2, 3].map((i) => `Error: head ${i}`),
      'Error: middle A',
      'Error: middle B',
      'Error: middle C',
      'Error: middle D',
      ...[8, 9, 10, 11].map((i) => `Error: head ${i}`),
    ]);
    const scan = (await logKeyLines(r.logPath, { skip: (l) => l.includes('head') }))!;
    expect(scan).toMatchObject({
      matchedLines: 19,
      selection: false,
      lines: ['Error: middle A', 'Error: middle B', 'Error: middle C', 'Error: middle D', 'Error: middle E'],
    });
  });

  test('an error at the end of a very long line is kept in its clipped form', async () => {
    const r = execResult(`${progress(0, 3000)}${'#'.repeat(500)} Error: boom at the end\n${progress(3000, 6000)}`);
    const a = await buildCommandAnswer(r);
    expect(a.keyLines).toHaveLength(1);
    expect(a.keyLines![0]).toMatch(/^…#+ Error: boom at the end$/);
    expect(a.keyLines![0]!.length).toBeLessThanOrEqual(201);
  });

  test('a short captured key line does not hide longer lines that contain it', async () => {
    // go test: a bare FAIL at the end; the failing test's own line is in the middle.
    const r = execResult(`${progress(0, 3000)}--- FAIL: TestParse (0.00s)\n${progress(3000, 6000)}FAIL\n`);
    const a = await buildCommandAnswer(r);
    expect(a.keyLines).toEqual(['FAIL', '--- FAIL: TestParse (0.00s)']);
  });

  test('a huge log searched only at both ends says so to the summarizer, even when nothing was found', async () => {
    const r = execResult(`${progress(0, 3000)}${'x'.repeat(100)}\n`);
    const big = Buffer.alloc(20 * 1024 * 1024, 'y\n');
    writeFileSync(r.logPath, big);
    const { summarizer, inputs } = recordingSummarizer();
    const a = await buildCommandAnswer(r, { summarizer });
    expect(a.keyLines).toBeUndefined();
    expect(
      inputs[0]!.output.endsWith(
        `[the log's middle ${big.length - 16 * 1024 * 1024} bytes were not searched for errors: only its first and last 8 MiB]\n`,
      ),
    ).toBe(true);
  });

  test('a truncated output whose log is gone still gets keyLines from what was captured', async () => {
    const r = execResult(`${progress(0, 2000)}${progress(2000, 3000)}FAILED test_z\n`);
    r.logPath = join(tempDir(), 'removed.log');
    const a = await buildCommandAnswer(r);
    expect(a.keyLines).toEqual(['FAILED test_z']);
  });
});

describe('logKeyLines', () => {
  test('many distinct error lines: the first eight and the last four, with the count of matches', async () => {
    const lines = Array.from({ length: 30 }, (_, i) => `${progress(i * 10, i * 10 + 10)}Error: case ${i}\nError: case ${i}\n`).join('');
    const path = join(tempDir(), 'many.log');
    writeFileSync(path, lines);
    const scan = await logKeyLines(path);
    expect(scan).toEqual({
      lines: [...[0, 1, 2, 3, 4, 5, 6, 7], ...[26, 27, 28, 29]].map((i) => `Error: case ${i}`),
      matchedLines: 60,
      selection: true,
      scannedBytes: Buffer.byteLength(lines),
      totalBytes: Buffer.byteLength(lines),
    });
  });

  test('a log larger than the budget: its start and end are read, the middle is not', async () => {
    const head = `error at the start\n${'a'.repeat(5000)}\n`;
    const middle = `${'b'.repeat(5000)}\nerror in the middle\n${'c'.repeat(5000)}\n`;
    // The tail range begins inside this line: its error word must not be taken for a whole line.
    const tail = `${'d'.repeat(4000)} error in a cut line\n${'e'.repeat(500)}\nerror at the end\n`;
    const text = head + middle + tail;
    const path = join(tempDir(), 'big.log');
    writeFileSync(path, text);
    const budget = 8192;
    const scan = (await logKeyLines(path, { maxBytes: budget }))!;
    expect(scan.scannedBytes).toBe(budget);
    expect(scan.totalBytes).toBe(Buffer.byteLength(text));
    expect(scan.lines).toEqual(['error at the start', 'error at the end']);
  });

  test('lines that cross the 1 MiB read chunks are found whole', async () => {
    const filler = `${'f'.repeat(99)}\n`;
    const before = filler.repeat(Math.floor((1024 * 1024 - 10) / filler.length));
    const pad = 'g'.repeat(1024 * 1024 - 10 - before.length);
    const text = `${before}${pad}\nsegmentation fault (core dumped) in worker 7\n${filler.repeat(20_000)}`;
    const path = join(tempDir(), 'cross.log');
    writeFileSync(path, text);
    expect((await logKeyLines(path))!.lines).toEqual(['segmentation fault (core dumped) in worker 7']);
  });

  test('lines already shown do not count toward the first and last ones', async () => {
    const path = join(tempDir(), 'skip.log');
    writeFileSync(path, `${Array.from({ length: 20 }, (_, i) => `Error: shown ${i}`).join('\n')}\nError: new one\n`);
    expect(await logKeyLines(path, { skip: (l) => l.includes('shown') })).toMatchObject({ lines: ['Error: new one'], matchedLines: 21 });
  });

  test('runs of empty or blank lines cost linear time, and are not error lines', async () => {
    // A line-start pattern that could cross newlines would backtrack over every empty line.
    for (const [name, blank] of [
      ['empty', '\n'],
      ['CRLF', '\r\n'],
      ['spaces', '        \n'],
    ] as const) {
      const path = join(tempDir(), `${name}.log`);
      writeFileSync(path, `start\n${blank.repeat(300_000)}E   assert 1 == 2\n${blank.repeat(300_000)}`);
      const started = Date.now();
      const scan = (await logKeyLines(path))!;
      expect({ name, lines: scan.lines, matchedLines: scan.matchedLines }).toEqual({ name, lines: ['E   assert 1 == 2'], matchedLines: 1 });
      expect(Date.now() - started).toBeLessThan(3000); // the quadratic version took minutes
    }
  });

  test('a character cut by a read boundary is decoded whole', async () => {
    const before = 'a'.repeat(1024 * 1024 - 33);
    const line = 'error: Datei nicht gefunden: Größe'; // 'ö' straddles the 1 MiB boundary
    const text = `${before}\n${line}\n`;
    expect(Buffer.byteLength(`${before}\n${line.slice(0, line.indexOf('ö'))}`)).toBe(1024 * 1024 - 1);
    const path = join(tempDir(), 'utf8.log');
    writeFileSync(path, text);
    expect((await logKeyLines(path))!.lines).toEqual([line]);
  });

  test('with a budget, a range that begins exactly at a line start keeps that line; the cut line at the end of the first range is not read', async () => {
    const budget = 4096;
    // The first range ends inside "error cut by the range"; the second begins at "error: at a line start".
    const head = `${'a'.repeat(2030)}\nerror cut by the range end ${'b'.repeat(100)}\n`;
    const tail = `error: at a line start\n${'c'.repeat(2048 - 'error: at a line start\n'.length - 1)}\n`;
    const text = `${head}${'m'.repeat(10_000)}\n${tail}`;
    expect(Buffer.byteLength(tail)).toBe(budget / 2);
    const path = join(tempDir(), 'edges.log');
    writeFileSync(path, text);
    expect((await logKeyLines(path, { maxBytes: budget }))!.lines).toEqual(['error: at a line start']);
  });

  test('binary or missing logs give nothing', async () => {
    const path = join(tempDir(), 'bin.log');
    writeFileSync(path, Buffer.concat([Buffer.from('error: x\n'), Buffer.alloc(10, 0)]));
    expect(await logKeyLines(path)).toBeUndefined();
    expect(await logKeyLines(join(tempDir(), 'none.log'))).toBeUndefined();
  });
});
