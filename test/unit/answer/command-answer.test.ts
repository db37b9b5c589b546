import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  answerForModel,
  buildCommandAnswer,
  extractiveSummary,
  keyLines,
  type OutputSummarizer,
} from '../../../src/answer/command-answer.js';
import { KEY_LINE_BUDGET, selectKeyLines } from '../../../src/answer/key-lines.js';
import { scanLog } from '../../../src/answer/log-scan.js';
import { StreamWindow } from '../../../src/capture/stream-window.js';
import type { ExecResult } from '../../../src/commands/exec-types.js';
import { removeTempDirs, tempDir } from '../helpers.js';

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

/** The key lines a scan of this log selects, for a failed run. */
async function logLines(path: string, maxBytes?: number): Promise<string[] | undefined> {
  const scan = await scanLog(path, maxBytes ? { maxBytes } : {});
  return scan && selectKeyLines(scan.collector, { exitCode: 1 });
}

describe('keyLines', () => {
  test('keeps error lines in order, once each, clipped, and skips the omission marker', () => {
    const text = [
      'collecting 3 items',
      'ValueError: bad literal',
      'all good here',
      'ValueError: bad literal',
      'src/app.ts:12:5: error TS2322',
      '[... 100 bytes, about 3 lines omitted of 300 bytes, 9 lines; full output: /x.log ...]',
      `FAILED tests/test_a.py::test_x - ${'x'.repeat(300)}`,
    ].join('\n');
    expect(keyLines(text)).toEqual([
      'ValueError: bad literal',
      'src/app.ts:12:5: error TS2322',
      `FAILED tests/test_a.py::test_x - ${'x'.repeat(120 - 33)}…${'x'.repeat(80)}`,
    ]);
  });

  test('a successful run gets no key line for a keyword in a file name or a warning; its passing verdict is the one line', () => {
    const listing = [
      './src/error_handler.c',
      './tests/test_errors.py',
      './fail2ban.conf',
      './timeout.go',
      './docs/ERROR.md',
      './warnings.txt',
    ];
    expect(keyLines(listing.join('\n'), { exitCode: 0 })).toEqual([]);
    expect(keyLines('src/a.c:3:5: warning: unused variable\n=== 30 passed in 0.12s ===\n', { exitCode: 0 })).toEqual([
      '=== 30 passed in 0.12s ===',
    ]);
    expect(keyLines('src/a.c:3:5: warning: unused variable\n', { exitCode: 0 })).toEqual([]);
  });

  test('errors are ranked over warnings: a head full of warnings does not crowd out the errors and the verdict', () => {
    const warnings = Array.from({ length: 40 }, (_, i) => `src/a.c:${i + 1}:5: warning: unused variable 'v${i}' [-Wunused-variable]`);
    const text = [
      ...warnings,
      "src/a.c:90:12: error: 'count' undeclared (first use in this function)",
      'make: *** [Makefile:4: a.o] Error 1',
    ].join('\n');
    expect(keyLines(text)).toEqual([
      "src/a.c:90:12: error: 'count' undeclared (first use in this function)",
      'make: *** [Makefile:4: a.o] Error 1',
    ]);
  });

  test('thousands of warnings do not crowd out the one error between them', () => {
    const warn = (i: number) => `src/m${i}.c:${i}:5: warning: unused variable 'v${i}' [-Wunused-variable]`;
    const text = [
      ...Array.from({ length: 2000 }, (_, i) => warn(i)),
      "src/m60.c:9:26: error: 'missing_symbol' undeclared (first use in this function)",
      'make: *** [Makefile:7: src/m60.o] Error 1',
      ...Array.from({ length: 2000 }, (_, i) => warn(i + 2000)),
      "make: Target 'all' not remade because of errors.",
    ].join('\n');
    expect(keyLines(text, { exitCode: 2 })).toEqual([
      "src/m60.c:9:26: error: 'missing_symbol' undeclared (first use in this function)",
      'make: *** [Makefile:7: src/m60.o] Error 1',
      "make: Target 'all' not remade because of errors.",
    ]);
  });

  test('colour codes are taken out before lines are read', () => {
    const text =
      "\x1b[96msrc/a.ts\x1b[0m:\x1b[93m3\x1b[0m:\x1b[93m10\x1b[0m - \x1b[91merror\x1b[0m\x1b[90m TS18048: \x1b[0m'u.email' is possibly 'undefined'.\n";
    expect(keyLines(text, { exitCode: 2 })).toEqual(["src/a.ts:3:10 - error TS18048: 'u.email' is possibly 'undefined'."]);
  });

  test("a failing test's exception, printed indented below its name, stays with it", () => {
    const text = [
      '✔ parses ports (0.4ms)',
      '✖ rejects out of range (0.58ms)',
      '  AssertionError [ERR_ASSERTION]: Missing expected exception (RangeError).',
      '      at TestContext.<anonymous> (/app/test/lib.test.js:7:12)',
      '      at Test.runInAsyncScope (node:async_hooks:206:9)',
      'ℹ fail 1',
    ].join('\n');
    expect(keyLines(text, { exitCode: 1 })).toEqual([
      '✖ rejects out of range (0.58ms)',
      'AssertionError [ERR_ASSERTION]: Missing expected exception (RangeError).',
      'at TestContext.<anonymous> (/app/test/lib.test.js:7:12)',
      'ℹ fail 1',
    ]);
  });

  test('a failed run with only a verdict keeps the error words before it; with nothing at all, its last lines', () => {
    const make = [
      'mkdir -p dist',
      'cp -r assets/ dist/',
      "cp: cannot stat 'assets/': No such file or directory",
      'make: *** [Makefile:7: install] Error 1',
    ];
    expect(keyLines(make.join('\n'), { exitCode: 2 })).toEqual([make[2], make[3]]);
    expect(keyLines('loading\nconfig key db.port missing\n', { exitCode: 255 })).toEqual(['loading', 'config key db.port missing']);
  });

  test('a long line keeps its start and its end, where the cause often is', () => {
    const line = `UnhandledPromiseRejection: This error originated either by throwing inside of an async function without a catch block, ${'or by rejecting a promise which was not handled with .catch(). '.repeat(2)}The promise rejected with the reason "quota exceeded".`;
    const [kept] = keyLines(line, { exitCode: 1 });
    expect(kept!.length).toBeLessThanOrEqual(201);
    expect(kept!.startsWith('UnhandledPromiseRejection: This error')).toBe(true);
    expect(kept!.endsWith('with the reason "quota exceeded".')).toBe(true);
  });

  test('a failed run with no error line keeps its warnings, else its loose error words', () => {
    expect(keyLines('building\nsrc/a.c:3:5: warning: unused variable\ndone\n')).toEqual(['src/a.c:3:5: warning: unused variable']);
    expect(keyLines('building\nthe upload was refused by the server\ndone\n')).toEqual(['the upload was refused by the server']);
    expect(keyLines('building\nthe upload was refused by the server\ndone\n', { exitCode: 0 })).toEqual([]);
  });

  test('a death by a signal keeps the last lines before it', () => {
    const text = Array.from({ length: 30 }, (_, i) => `processing record ${i}`).join('\n');
    expect(keyLines(text, { exitCode: 139, signal: true })).toEqual([
      'processing record 27',
      'processing record 28',
      'processing record 29',
    ]);
  });

  test('a failure keeps its frames in the project, not the runtime, and the budget holds', () => {
    const trace = [
      'Traceback (most recent call last):',
      '  File "/app/main.py", line 20, in <module>',
      '    main()',
      '  File "/app/main.py", line 16, in main',
      '    load(cfg)',
      '  File "/app/loader.py", line 11, in load',
      '    return json.loads(text)',
      '  File "/usr/lib/python3.11/json/__init__.py", line 346, in loads',
      '    return _default_decoder.decode(s)',
      'json.decoder.JSONDecodeError: Expecting value: line 1 column 1 (char 0)',
    ].join('\n');
    const lines = keyLines(trace);
    expect(lines).toContain('File "/app/loader.py", line 11, in load');
    expect(lines).toContain('json.decoder.JSONDecodeError: Expecting value: line 1 column 1 (char 0)');
    expect(lines.some((l) => l.includes('/usr/lib/python3.11'))).toBe(false);
    const many = Array.from({ length: 500 }, (_, i) => `src/m${i}.c:1:1: error: expected ';' before '}' token number ${i}`).join('\n');
    const chosen = keyLines(many);
    expect(chosen.length).toBeLessThanOrEqual(KEY_LINE_BUDGET.lines);
    expect(chosen.join('\n').length).toBeLessThanOrEqual(KEY_LINE_BUDGET.chars);
    // The first error and the last one.
    expect(chosen[0]).toContain('number 0');
    expect(chosen[chosen.length - 1]).toContain('number 499');
  });
});

describe('extractiveSummary', () => {
  test('counts, first lines and last lines; only the last ones beside key lines', () => {
    const r = execResult(progress(0, 30));
    const s = extractiveSummary(r);
    expect(s.split('\n')[0]).toBe(`30 lines, ${r.bytes.stdout} bytes of output.`);
    expect(s).toContain('First lines:\nstep 0: ok');
    expect(s).toContain('Last lines:');
    expect(s.trimEnd().endsWith('step 29: ok, 12 items processed')).toBe(true);
    const beside = extractiveSummary(r, ['step 29: ok, 12 items processed']);
    expect(beside).not.toContain('First lines:');
    expect(beside.split('\n')).toEqual([
      `30 lines, ${r.bytes.stdout} bytes of output.`,
      'Last lines:',
      'step 27: ok, 12 items processed',
      'step 28: ok, 12 items processed',
    ]);
  });
});

describe('extractiveSummary of coloured output', () => {
  test('quotes its lines without colour codes (the JUnit console launcher colours its tree even without a terminal)', () => {
    const tree = [
      '\x1b[36m╷\x1b[0m',
      '\x1b[36m├─\x1b[0m \x1b[36mJUnit Platform Suite\x1b[0m \x1b[32m✔\x1b[0m',
      '\x1b[36m├─\x1b[0m \x1b[36mJUnit Jupiter\x1b[0m \x1b[32m✔\x1b[0m',
      ...Array.from({ length: 40 }, (_, i) => `\x1b[36m│  ├─\x1b[0m \x1b[34mtestCase${i}()\x1b[0m \x1b[32m✔\x1b[0m`),
    ].join('\n');
    const s = extractiveSummary(execResult(`${tree}\n`));
    expect(s).not.toContain('\x1b');
    expect(s).toContain('First lines:\n╷\n├─ JUnit Platform Suite ✔');
    expect(s.trimEnd().endsWith('│  ├─ testCase39() ✔')).toBe(true);
  });
});

describe('buildCommandAnswer', () => {
  test('short output goes whole as `output`, with no summarizer call and no field that states a default', async () => {
    const { summarizer, inputs } = recordingSummarizer();
    const a = await buildCommandAnswer(execResult('hello\n'), { summarizer });
    expect(a).toEqual({ exitCode: 0, output: 'hello\n', logPath: a.logPath });
    expect(answerForModel(a)).toEqual({ exitCode: 0, output: 'hello\n' });
    expect(inputs).toEqual([]);
  });

  test('long output: the summarizer writes the summary, key lines go verbatim beside it, flags carried', async () => {
    const { summarizer, inputs } = recordingSummarizer('  It failed.  ');
    const out = `${progress(0, 100)}AssertionError: expected 3\n`;
    const a = await buildCommandAnswer(execResult(out, { exitCode: 1, timedOut: true, reason: 'timed out after 5 ms' }), { summarizer });
    expect(a).toMatchObject({
      exitCode: 1,
      summary: 'FAILED: exit code 1, timed out.\nIt failed.',
      summaryKind: 'model',
      keyLines: ['AssertionError: expected 3'],
      timedOut: true,
      reason: 'timed out after 5 ms',
    });
    expect(inputs).toEqual([
      { command: 'cmd', exitCode: 1, output: out, reason: 'timed out after 5 ms', keyLines: ['AssertionError: expected 3'] },
    ]);
  });

  test('a timed-out answer says which argument gives a command longer, and its most; other answers do not', async () => {
    const arg = { timeoutArgument: { name: 'timeoutMs', maxMs: 1_800_000 } };
    const timedOut = execResult('running 68 tests\n', {
      exitCode: 124,
      timedOut: true,
      reason: 'timed out after 300000 ms; its process tree was killed',
    });
    expect((await buildCommandAnswer(timedOut, arg)).reason).toBe(
      'timed out after 300000 ms; its process tree was killed; to give it longer, run it again with timeoutMs up to 1800000 (30 min)',
    );
    expect((await buildCommandAnswer(timedOut, { timeoutArgument: { name: 'timeoutSeconds', maxMs: 90_500 } })).reason).toMatch(
      /with timeoutSeconds up to 90500 \(90\.5 s\)$/,
    );
    // Without the argument (a caller whose timeout the model cannot set), the reason alone.
    expect((await buildCommandAnswer(timedOut)).reason).toBe('timed out after 300000 ms; its process tree was killed');
    expect((await buildCommandAnswer(execResult('ok\n', { exitCode: 1, reason: 'killed by the memory limit (64 MiB)' }), arg)).reason).toBe(
      'killed by the memory limit (64 MiB)',
    );
  });

  test('a failing or missing summarizer falls back to the extractive summary; a long summary is cut, shorter beside key lines', async () => {
    const out = progress(0, 100);
    const failing: OutputSummarizer = async () => {
      throw new Error('quota');
    };
    expect(await buildCommandAnswer(execResult(out), { summarizer: failing })).toMatchObject({ summaryKind: 'extractive' });
    expect(await buildCommandAnswer(execResult(out))).toMatchObject({ summaryKind: 'extractive' });
    const long = await buildCommandAnswer(execResult(out), { summarizer: recordingSummarizer('y'.repeat(2000)).summarizer });
    expect(long.summary).toBe(`${'y'.repeat(799)}…`);
    const sentences = 'The build failed in one file. '.repeat(30);
    const beside = await buildCommandAnswer(execResult(`${out}src/a.c:1:2: error: boom\n`, { exitCode: 1 }), {
      summarizer: recordingSummarizer(sentences).summarizer,
    });
    expect(beside.keyLines).toEqual(['src/a.c:1:2: error: boom']);
    expect(beside.summary!.startsWith('FAILED: exit code 1.\n')).toBe(true);
    expect(beside.summary!.length).toBeLessThanOrEqual(300 + 'FAILED: exit code 1.\n'.length);
    expect(beside.summary!.endsWith('file.')).toBe(true);
  });

  test('binary output is answered with its one-line note, not summarized', async () => {
    const { summarizer, inputs } = recordingSummarizer();
    const a = await buildCommandAnswer(execResult(Buffer.alloc(40_000, 0)), { summarizer });
    expect(a.summary).toBeUndefined();
    expect(a.output).toMatch(/^\[binary output: 40000 bytes, not shown; exact bytes in .*0001-cmd\.log\]$/);
    expect(inputs).toEqual([]);
  });

  test('output that is almost all binary is a note, with the key lines of the text in its log beside it', async () => {
    // `cat logs/*` over a large gzip member, the test log after it glued to its last bytes.
    const gz = Buffer.from(Array.from({ length: 300_000 }, (_, i) => (i * 7919 + 13) % 251));
    const log = Buffer.from(
      '\u0000\u0000--- FAIL: TestSHA1 (0.00s)\n    uuid_test.go:421: SHA1: got "886313e1" expected "9b90"\nFAIL\tgithub.com/google/uuid\t1.510s\n',
    );
    const a = await buildCommandAnswer(execResult(Buffer.concat([gz, log])), { summarizer: recordingSummarizer().summarizer });
    expect(a.output).toMatch(/^\[binary output: /);
    expect(a.keyLines).toEqual([
      '--- FAIL: TestSHA1 (0.00s)',
      'uuid_test.go:421: SHA1: got "886313e1" expected "9b90"',
      'FAIL\tgithub.com/google/uuid\t1.510s',
    ]);
  });

  test('text beside binary data: the text is shown and scanned, the binary part is a note', async () => {
    const gz = Buffer.from(Array.from({ length: 3000 }, (_, i) => (i * 7919 + 13) % 256));
    const bytes = Buffer.concat([Buffer.from('app started\n'), gz, Buffer.from('\n2026-01-02 10:00:01 ERROR db: connection refused\n')]);
    const r = execResult(bytes);
    expect(r.stdout).toContain('2026-01-02 10:00:01 ERROR db: connection refused');
    expect(r.stdout).toMatch(/\[binary data: \d+ bytes, not shown\]/);
    const a = await buildCommandAnswer(r);
    expect(a.keyLines).toEqual(['2026-01-02 10:00:01 ERROR db: connection refused']);
  });

  test('an exit code of 128 + N names the signal; a timeout or a reason does not', async () => {
    const lines = Array.from({ length: 300 }, (_, i) => `record ${i} parsed`).join('\n');
    const a = await buildCommandAnswer(execResult(lines, { exitCode: 139 }));
    expect(a.signal).toBe('SIGSEGV (segmentation fault: an invalid memory access)');
    expect(a.keyLines).toEqual(['record 297 parsed', 'record 298 parsed', 'record 299 parsed']);
    expect((await buildCommandAnswer(execResult('x\n', { exitCode: 134 }))).signal).toMatch(/^SIGABRT/);
    expect((await buildCommandAnswer(execResult('x\n', { exitCode: 137, timedOut: true }))).signal).toBeUndefined();
    expect((await buildCommandAnswer(execResult('x\n', { exitCode: 137, reason: 'the container was killed' }))).signal).toBeUndefined();
    expect((await buildCommandAnswer(execResult('x\n', { exitCode: 2 }))).signal).toBeUndefined();
  });

  test('errors at the end of a long output are kept, and so are those in the omitted middle, from the log', async () => {
    const out = `${progress(0, 2000)}Traceback (most recent call last):\n  File "/app/job.py", line 9, in run\nKeyError: 'price'\n${progress(2000, 4000)}CRITICAL job: 1 task failed\n`;
    const r = execResult(out, { exitCode: 1 });
    expect(r.truncated).toBe(true);
    expect(r.stdout).not.toContain('KeyError');
    const { summarizer, inputs } = recordingSummarizer();
    const a = await buildCommandAnswer(r, { summarizer });
    expect(a.keyLines).toEqual(['File "/app/job.py", line 9, in run', "KeyError: 'price'", 'CRITICAL job: 1 task failed']);
    // The summarizer sees the capped output plus the middle's key lines, marked as such.
    expect(inputs[0]!.output.startsWith(r.stdout)).toBe(true);
    expect(inputs[0]!.output.slice(r.stdout.length)).toBe(
      `\n[key lines from the omitted middle of the output, from the full log:]\nFile "/app/job.py", line 9, in run\nKeyError: 'price'\n`,
    );
  });

  test("a captured key line that the log has inside another stream's line is still kept, once", async () => {
    // stdout ended without a newline when stderr printed its line: in the log they share one.
    const r = execResult(`${progress(0, 3000)}filler abc`, { stderr: 'FAILED: 3 of 120 tests failed\n', exitCode: 1 });
    writeFileSync(r.logPath, `${progress(0, 3000)}filler abcFAILED: 3 of 120 tests failed\n`);
    const a = await buildCommandAnswer(r);
    expect(a.keyLines).toEqual(['FAILED: 3 of 120 tests failed']);
  });

  test("a captured key line inside another stream's line of the log is kept beside the log's own errors", async () => {
    // The log has real errors of its own, so the glued line is only a loose mention there.
    const head = 'ERROR: disk check failed on /dev/sda1\n';
    const r = execResult(`${head}${progress(0, 3000)}filler abc`, { stderr: 'FAILED: 3 of 120 tests failed\n', exitCode: 1 });
    writeFileSync(r.logPath, `${head}${progress(0, 3000)}filler abcFAILED: 3 of 120 tests failed\n`);
    const a = await buildCommandAnswer(r);
    expect(a.keyLines).toEqual(['ERROR: disk check failed on /dev/sda1', 'FAILED: 3 of 120 tests failed']);
  });

  test('a cut output with many failures: its key lines are the log’s, in the log’s order, every line beside its own test', async () => {
    // node --test's TAP on Node 18 (as it printed a library's suite that needs a global
    // crypto): two suites of the same tests, all failing, one of them for another cause.
    const failing = (n: number, name: string, at: number, yaml: string[]) => [
      `    # Subtest: ${name}`,
      `    not ok ${n} - ${name}`,
      '      ---',
      '      duration_ms: 0.56927',
      `      location: 'file:///workspace/test/index.test.js:${at}:5'`,
      "      failureType: 'testCodeFailure'",
      ...yaml,
      '      stack: |-',
      `        TestContext.<anonymous> (file:///workspace/test/index.test.js:${at + 1}:18)`,
      '        Test.runInAsyncScope (node:async_hooks:203:9)',
      '        Test.run (node:internal/test_runner/test:631:25)',
      '        async Suite.processPendingSubtests (node:internal/test_runner/test:374:7)',
      '      ...',
    ];
    const crypto = ["      error: 'crypto is not defined'", "      code: 'ERR_TEST_FAILURE'", "      name: 'ReferenceError'"];
    const suite = (name: string, n: number, third: string[]) => [
      `# Subtest: ${name}`,
      ...Array.from({ length: 20 }, (_, i) => failing(i + 1, `generates IDs case ${i + 1}`, 30 + 8 * i, i === 2 ? third : crypto)).flat(),
      `not ok ${n} - ${name}`,
    ];
    const mismatch = [
      "      error: '10 == 11'",
      "      code: 'ERR_ASSERTION'",
      "      name: 'AssertionError'",
      '      expected: 11',
      '      actual: 10',
      "      operator: '=='",
    ];
    const log = [
      'TAP version 13',
      ...suite('node', 1, crypto),
      ...suite('browser', 2, mismatch),
      '1..2',
      '# tests 40',
      '# pass 0',
      '# fail 40',
      '# duration_ms 1611.809651',
      '',
    ].join('\n');
    const r = execResult(log, { exitCode: 1 });
    expect(r.truncated).toBe(true);
    const a = await buildCommandAnswer(r);
    // Each line in the order the log has it: no line stranded after the verdict, away from its test.
    // (The two suites repeat lines: each key line is looked for after the one before it.)
    const lines = log.split('\n').map((l) => l.trim());
    let from = 0;
    const stranded = a.keyLines!.filter((k) => {
      const i = lines.indexOf(k, from);
      from = i < 0 ? from : i + 1;
      return i < 0;
    });
    expect(stranded).toEqual([]);
    expect(a.keyLines).toEqual(expect.arrayContaining(["error: '10 == 11'", 'expected: 11', 'actual: 10', '# fail 40']));
  });

  test('an error at the end of a very long line is kept in its clipped form', async () => {
    const r = execResult(`${progress(0, 3000)}${'#'.repeat(500)} ERROR boom at the end\n${progress(3000, 6000)}`, { exitCode: 1 });
    const a = await buildCommandAnswer(r);
    expect(a.keyLines).toHaveLength(1);
    expect(a.keyLines![0]).toMatch(/^…#+ ERROR boom at the end$/);
    expect(a.keyLines![0]!.length).toBeLessThanOrEqual(201);
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
    const r = execResult(`${progress(0, 2000)}${progress(2000, 3000)}FAILED tests/test_z.py::test_z\n`, { exitCode: 1 });
    r.logPath = join(tempDir(), 'removed.log');
    const a = await buildCommandAnswer(r);
    expect(a.keyLines).toEqual(['FAILED tests/test_z.py::test_z']);
  });
});

describe('scanLog', () => {
  test('many distinct errors: the first and the last one, then as many between as the budget holds', async () => {
    const text = Array.from({ length: 30 }, (_, i) => `${progress(i * 10, i * 10 + 10)}error: case ${i}\nerror: case ${i}\n`).join('');
    const path = join(tempDir(), 'many.log');
    writeFileSync(path, text);
    const lines = (await logLines(path))!;
    expect(lines.length).toBe(KEY_LINE_BUDGET.lines);
    expect(lines[0]).toBe('error: case 0');
    expect(lines[lines.length - 1]).toBe('error: case 29');
    expect(new Set(lines).size).toBe(lines.length);
  });

  test('a log larger than the budget: its start and end are read, the middle is not', async () => {
    const head = `error: at the start\n${'a'.repeat(5000)}\n`;
    const middle = `${'b'.repeat(5000)}\nerror: in the middle\n${'c'.repeat(5000)}\n`;
    // The tail range begins inside this line: its error word must not be taken for a whole line.
    const tail = `${'d'.repeat(4000)} ERROR in a cut line\n${'e'.repeat(500)}\nerror: at the end\n`;
    const text = head + middle + tail;
    const path = join(tempDir(), 'big.log');
    writeFileSync(path, text);
    const scan = (await scanLog(path, { maxBytes: 8192 }))!;
    expect(scan.scannedBytes).toBe(8192);
    expect(scan.totalBytes).toBe(Buffer.byteLength(text));
    expect(await logLines(path, 8192)).toEqual(['error: at the start', 'error: at the end']);
  });

  test('lines that cross the 1 MiB read chunks are found whole', async () => {
    const filler = `${'f'.repeat(99)}\n`;
    const before = filler.repeat(Math.floor((1024 * 1024 - 10) / filler.length));
    const pad = 'g'.repeat(1024 * 1024 - 10 - before.length);
    const text = `${before}${pad}\nworker 7: Segmentation fault (core dumped)\n${filler.repeat(20_000)}`;
    const path = join(tempDir(), 'cross.log');
    writeFileSync(path, text);
    expect(await logLines(path)).toEqual(['worker 7: Segmentation fault (core dumped)']);
  });

  test('runs of empty or blank lines cost linear time, and are not error lines', async () => {
    for (const [name, blank] of [
      ['empty', '\n'],
      ['CRLF', '\r\n'],
      ['spaces', '        \n'],
    ] as const) {
      const path = join(tempDir(), `${name}.log`);
      writeFileSync(path, `start\n${blank.repeat(300_000)}E   assert 1 == 2\n${blank.repeat(300_000)}`);
      const started = Date.now();
      expect({ name, lines: await logLines(path) }).toEqual({ name, lines: ['E   assert 1 == 2'] });
      // A generous bound that a loaded machine keeps: quadratic work on 600,000 lines would take hours.
      expect(Date.now() - started).toBeLessThan(30_000);
    }
  });

  test('a character cut by a read boundary is decoded whole', async () => {
    const before = 'a'.repeat(1024 * 1024 - 33);
    const line = 'error: Datei nicht gefunden: Größe'; // 'ö' straddles the 1 MiB boundary
    const text = `${before}\n${line}\n`;
    expect(Buffer.byteLength(`${before}\n${line.slice(0, line.indexOf('ö'))}`)).toBe(1024 * 1024 - 1);
    const path = join(tempDir(), 'utf8.log');
    writeFileSync(path, text);
    expect(await logLines(path)).toEqual([line]);
  });

  test('with a budget, a range that begins exactly at a line start keeps that line; the cut line at the end of the first range is not read', async () => {
    const budget = 4096;
    const head = `${'a'.repeat(2030)}\nerror: cut by the range end ${'b'.repeat(100)}\n`;
    const tail = `error: at a line start\n${'c'.repeat(2048 - 'error: at a line start\n'.length - 1)}\n`;
    const text = `${head}${'m'.repeat(10_000)}\n${tail}`;
    expect(Buffer.byteLength(tail)).toBe(budget / 2);
    const path = join(tempDir(), 'edges.log');
    writeFileSync(path, text);
    expect(await logLines(path, budget)).toEqual(['error: at a line start']);
  });

  test('binary data is passed over, text lines beside it are scanned; a missing log gives nothing', async () => {
    const path = join(tempDir(), 'bin.log');
    writeFileSync(path, Buffer.concat([Buffer.from('error: before\n'), Buffer.alloc(10, 0), Buffer.from('\nerror: after\n')]));
    expect(await logLines(path)).toEqual(['error: before', 'error: after']);
    expect(await scanLog(join(tempDir(), 'none.log'))).toBeUndefined();
  });
});
