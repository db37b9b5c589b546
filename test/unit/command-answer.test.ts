import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { buildCommandAnswer, extractiveSummary, keyLines, logKeyLines, type OutputSummarizer } from '../../src/output/command-answer.js';
import { StreamWindow } from '../../src/output/stream-window.js';
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
    bytes: { stdout: bytes.length, stderr: 0 },
    lines: { stdout: window.lines, stderr: 0 },
    durationMs: 5,
    logPath,
    ...extra,
  };
}

const progress = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => `step ${from + i}: ok, 12 items processed`).join('\n') + '\n';

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
    expect(a).toMatchObject({ exitCode: 1, summary: 'It failed.', summaryKind: 'model', keyLines: ['AssertionError: expected 3'], timedOut: true, reason: 'timed out after 5 ms' });
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
    expect(inputs[0]!.output.slice(r.stdout.length)).toBe("\n[error-like lines from the omitted middle of the output:]\nTraceback (most recent call last):\nKeyError: 'price'\n");
  });

  test('a captured error line that the log has inside another stream\'s line is not repeated', async () => {
    // stdout ended without a newline when stderr printed its line: in the log they share one.
    const r = execResult(`${progress(0, 3000)}filler abc`, { stderr: 'FAILED: 3 of 120 tests failed\n' });
    writeFileSync(r.logPath, `${progress(0, 3000)}filler abcFAILED: 3 of 120 tests failed\n`);
    const a = await buildCommandAnswer(r);
    expect(a.keyLines).toEqual(['FAILED: 3 of 120 tests failed']);
  });

  test('many error lines in the captured part still leave room for the middle', async () => {
    const errors = (tag: string) => Array.from({ length: 14 }, (_, i) => `Error: ${tag} ${i}`).join('\n') + '\n';
    const r = execResult(`${errors('head')}${progress(0, 3000)}Error: middle A\nError: middle B\nError: middle C\nError: middle D\nError: middle E\n${progress(3000, 6000)}`);
    const a = await buildCommandAnswer(r);
    expect(a.keyLines).toHaveLength(12);
    expect(a.keyLines!.slice(0, 8)).toEqual(Array.from({ length: 8 }, (_, i) => `Error: head ${i}`));
    // Four from the middle (the first of them: the scan keeps the first eight new ones).
    expect(a.keyLines!.slice(8)).toEqual(['Error: middle A', 'Error: middle B', 'Error: middle C', 'Error: middle D']);
    const scan = (await logKeyLines(r.logPath, { skip: (l) => l.includes('head') }))!;
    expect(scan).toMatchObject({ matchedLines: 19, selection: false, lines: ['Error: middle A', 'Error: middle B', 'Error: middle C', 'Error: middle D', 'Error: middle E'] });
  });

  test('an error at the end of a very long line is kept in its clipped form', async () => {
    const r = execResult(`${progress(0, 3000)}${'#'.repeat(500)} Error: boom at the end\n${progress(3000, 6000)}`);
    const a = await buildCommandAnswer(r);
    expect(a.keyLines).toHaveLength(1);
    expect(a.keyLines![0]).toMatch(/^…#+ Error: boom at the end$/);
    expect(a.keyLines![0]!.length).toBeLessThanOrEqual(201);
  });

  test('a truncated output whose log is gone still gets keyLines from what was captured', async () => {
    const r = execResult(`${progress(0, 2000)}${progress(2000, 3000)}FAILED test_z\n`);
    r.logPath = join(tempDir(), 'removed.log');
    const a = await buildCommandAnswer(r);
    expect(a.keyLines).toEqual(['FAILED test_z']);
  });
});

describe('logKeyLines', () => {
  test('many distinct error lines: the first eight and the last four, with the distinct count', async () => {
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

  test('binary or missing logs give nothing', async () => {
    const path = join(tempDir(), 'bin.log');
    writeFileSync(path, Buffer.concat([Buffer.from('error: x\n'), Buffer.alloc(10, 0)]));
    expect(await logKeyLines(path)).toBeUndefined();
    expect(await logKeyLines(join(tempDir(), 'none.log'))).toBeUndefined();
  });
});
