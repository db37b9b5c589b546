import { classifyLine, LINE_RULES } from '../../../src/answer/line-rules.js';

/** Lines as the toolchains print them (from bench/corpus and the tools' documented formats), and what each is. */
const EXAMPLES: Array<[string, string]> = [
  ['3 errors', 'verdict'],
  ['error: could not compile `todo-cli` (bin "todo-cli") due to 2 previous errors', 'verdict'],
  ["make: Target 'all' not remade because of errors.", 'verdict'],
  ['FAILED (failures=2, errors=1)', 'verdict'],
  ['Tests:       2 failed, 14 passed, 16 total', 'verdict'],
  ['=================== 3 failed, 12 passed, 2 warnings in 0.56s ===================', 'verdict'],
  ['SUMMARY: AddressSanitizer: heap-buffer-overflow /w/reader.c:12 in read_record', 'verdict'],
  ['not ok 15 - parses the header', 'test'],
  ['  ● topWords › breaks ties alphabetically', 'test'],
  ['test tests::bump_minor ... FAILED', 'test'],
  ['FAIL: test_punctuation (test_textutil.SlugifyTest.test_punctuation)', 'test'],
  ['--- FAIL: TestParse (0.00s)', 'test'],
  ['src/a.c:12:5: error: expected ‘;’ before ‘}’ token', 'error'],
  ["src/store.ts(7,11): error TS2322: Type 'string' is not assignable to type 'number'.", 'error'],
  ['Invoice.java:28: error: incompatible types: long cannot be converted to String', 'error'],
  ['error[E0308]: mismatched types', 'error'],
  ["thread 'main' (25565) panicked at src/main.rs:14:19:", 'error'],
  ["ValueError: invalid literal for int() with base 10: '??'", 'error'],
  ['Exception in thread "main" java.lang.IllegalStateException: closed', 'error'],
  ['==22969==ERROR: AddressSanitizer: heap-buffer-overflow on address 0x602000000015', 'error'],
  ["prog: main.c:8: check: Assertion `x > 0' failed.", 'error'],
  ['./deploy.sh: line 17: DEPLOY_HOST: unbound variable', 'error'],
  ["ld: error: undefined reference to 'parse_config'", 'error'],
  ['2024-05-13T08:31:07Z ERROR db   pool exhausted', 'error'],
  ['Expected: 2', 'detail'],
  ['  left: Version { major: 1 }', 'detail'],
  ['E       assert 36.2 == 38.2', 'detail'],
  ['  symbol:   variable Money', 'detail'],
  ['  --> src/main.rs:35:28', 'location'],
  ['tests/test_report.py:19: AssertionError', 'location'],
  ['  File "/app/report.py", line 14, in load_meta', 'frame'],
  ['    at money (/app/lib/format.js:6:29)', 'frame'],
  ['\tat Main.parse(Main.java:13)', 'frame'],
  ['    #0 0x5651a20395aa in read_record /w/reader.c:12', 'frame'],
  ['==22997==    at 0x109188: average (prog.c:8)', 'frame'],
  ["src/a.c:3:5: warning: unused variable 'v' [-Wunused-variable]", 'warning'],
  ["src/a.ts:3:10 - error TS18048: 'u.email' is possibly 'undefined'.", 'error'],
  ['  ✖ rejects out of range (0.58ms)', 'test'],
  ['ℹ fail 4', 'verdict'],
  ['4 failed, 4 passed in 0.14s', 'verdict'],
  ['***Test Failed*** 2 failures.', 'verdict'],
  ['33% tests passed, 2 tests failed out of 3', 'verdict'],
  ['[INFO] BUILD FAILURE', 'verdict'],
  ["terminate called after throwing an instance of 'std::out_of_range'", 'error'],
  ['config key db.port missing at script.pl line 3.', 'error'],
  ['main.cpp:13:12:   required from here', 'location'],
  ['note: test did not panic as expected at src/lib.rs:14:8', 'detail'],
  ['2026-11-24 22:19:00,351 ERROR record 9137 could not be normalized', 'error'],
  ['[2026-11-24 22:19:00] FATAL db: pool exhausted', 'error'],
  ['time=2026-11-24T22:19:00Z level=error msg="pool exhausted"', 'error'],
  // go test: t.Errorf lines (a subtest's deeper), verdicts, a goroutine's frames
  ['    null_test.go:196: expected json data "12345678-abcd", got "12345678-0101"', 'detail'],
  ['        parse_test.go:42: Parse("1.2") = 3, want 4', 'detail'],
  ['FAIL\tgithub.com/google/uuid\t1.510s', 'verdict'],
  ['FAIL\tgithub.com/google/uuid [build failed]', 'verdict'],
  ['ok  \tgithub.com/google/uuid\t1.364s', 'pass'],
  ['\t/workspace/uuid.go:297 +0x211', 'frame'],
  ['github.com/google/uuid.encodeHex({0xc00008c090?, 0xc000087a00?}, {0xf4, 0x7a, 0xc1})', 'frame'],
  // mocha
  ['  19 failing', 'verdict'],
  ['  45 passing (21ms)', 'pass'],
  ['  1) mimeTypes', 'test'],
  // PHPUnit
  ['1) JmesPath\\Tests\\ComplianceTest::testPassesCompliance with data set #856 (array(-1, 0))', 'test'],
  ['8) App\\Tests\\MoneyTest::testAdd', 'test'],
  ['Failed asserting that two strings are equal.', 'detail'],
  ['/workspace/tests/ComplianceTest.php:85', 'location'],
  ['Tests: 68, Assertions: 70, Failures: 8.', 'verdict'],
  ['Tests: 3746, Assertions: 8082, Errors: 4, Failures: 4, Warnings: 1.', 'verdict'],
  ['OK (68 tests, 70 assertions)', 'pass'],
  // rspec: the verdicts, the failing line, expected and got, an error named alone, the spec's line
  ['3 examples, 3 failures', 'verdict'],
  ['129 examples, 1 failure', 'verdict'],
  ['12 examples, 0 failures, 1 error occurred outside of examples', 'verdict'],
  ['129 examples, 0 failures', 'pass'],
  ['12 examples, 0 failures, 2 pending', 'pass'],
  ['     Failure/Error: expect(2 + 2).to eq(5)', 'detail'],
  ['            got: 4', 'detail'],
  ['       expected [1, 2] to include 3', 'detail'],
  ['     NoMethodError:', 'error'],
  ['An error occurred while loading ./spec/load_spec.rb. - Did you mean?', 'error'],
  ['An error occurred in a `before(:suite)` hook.', 'error'],
  ["     # ./spec/calc_spec.rb:3:in `block (2 levels) in <top (required)>'", 'frame'],
  // node --test's TAP: where the test is, what it compared
  ["      location: 'file:///workspace/test/index.test.js:47:5'", 'location'],
  ['      expected: 11', 'detail'],
  // testify's padded label, Go's want
  ['        \t            \tactual  : 4', 'detail'],
  ['        want: int64', 'detail'],
  // minitest and Ruby frames (Ruby 3.1 and 3.4 quoting)
  ['112 runs, 126 assertions, 17 failures, 21 errors, 0 skips', 'verdict'],
  ['12 runs, 30 assertions, 0 failures, 1 errors, 0 skips', 'verdict'],
  ['12 runs, 30 assertions, 0 failures, 0 errors, 0 skips', 'pass'],
  ['  2) Error:', 'test'],
  ["    /workspace/lib/mustache.rb:210:in `escape'", 'frame'],
  ["lib/x/types.rb:76:in 'call'", 'frame'],
  ["    lib/dry/types/nominal.rb:76:in 'Dry::Types::Nominal#call'", 'frame'],
  // unittest's doctests, pytest's failing line
  ['Got nothing', 'detail'],
  ['Failed example:', 'detail'],
  ['>       assert pairwise(range(4), end=None) == [(0, 1), (1, 2)]', 'detail'],
  // cargo, rustc, ctest and Unity
  ['test result: ok. 11 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s', 'pass'],
  ['    |                                        ^^^^^^^^^^^^^^^^^^^ expected `usize`, found `u32`', 'detail'],
  ['3 |     let n: u32 = total;', 'none'],
  ['100% tests passed, 0 tests failed out of 19', 'pass'],
  ['95% tests passed, 1 tests failed out of 19', 'verdict'],
  ['The following tests FAILED:', 'verdict'],
  ['/w/tests/misc_tests.c:460:cjson_functions_should_not_crash:FAIL: Expected FALSE Was TRUE', 'test'],
  ['    |  |_____^ expected `u32`, found `u64`', 'detail'],
  // go build and vet under go test, mocha's bare Error, relative PHP paths
  ['./uuid.go:315:9: cannot use int(uuid[6] >> 4) (value of type int) as type Version in return statement', 'error'],
  ['pkg/parse/lexer.go:88:2: declared and not used: tok', 'error'],
  ['     Error: Timeout of 2000ms exceeded. For async tests and hooks, ensure "done()" is called', 'error'],
  ['tests/Unit/MoneyTest.php:58', 'location'],
  // googletest under ctest
  ['[  FAILED  ] MoneyTest.AddsCents (0 ms)', 'test'],
  ['[  FAILED  ] 2 tests, listed below:', 'mention'],
  ['/w/test/money_test.cc:42: Failure', 'error'],
  ['Expected equality of these values:', 'detail'],
  ['    Which is: 301', 'detail'],
  [' 2 FAILED TESTS', 'verdict'],
  ['[  PASSED  ] 12 tests.', 'pass'],
  // Maven surefire, JUnit
  ['[ERROR] Tests run: 12, Failures: 2, Errors: 0, Skipped: 0', 'verdict'],
  ['[INFO] Tests run: 12, Failures: 0, Errors: 0, Skipped: 0', 'pass'],
  ['[ERROR]   MoneyTest.testAdd:12 expected:<3> but was:<4>', 'error'],
  ['java.lang.AssertionError: expected:<3> but was:<4>', 'error'],
  // The JUnit console launcher's closing table: how many passed (a passing run's last word), how many failed.
  ['[       745 tests successful      ]', 'pass'],
  // Ruby's test-unit
  ['Failure: test_create(TestRakeFileList)', 'test'],
  ['Error: test_broken(TestRakeFileList):', 'test'],
  ['Failure: test_c(U): <RuntimeError> exception was expected but none was thrown.', 'test'],
  ['<1> expected but was', 'detail'],
  ['120 tests, 314 assertions, 1 failures, 1 errors, 0 pendings, 0 omissions, 0 notifications', 'verdict'],
  ['67 tests, 222 assertions, 0 failures, 0 errors, 0 pendings, 0 omissions, 0 notifications', 'pass'],
  ['[         2 tests failed          ]', 'verdict'],
  ['[         1 containers failed     ]', 'verdict'],
  ['  JUnit Jupiter:UtilTest:testStripLeadingAndTrailingQuotes()', 'test'],
  ['    => org.opentest4j.AssertionFailedError: expected: <fooo> but was: <foo>', 'error'],
  ['	at com.example.MoneyTest.testAdd(MoneyTest.java:12)', 'frame'],
];

describe('classifyLine', () => {
  test.each(EXAMPLES)('%s', (line, kind) => {
    expect(classifyLine(line)?.kind ?? 'none').toBe(kind);
  });

  test('a keyword inside a file name, a path or a word is no error', () => {
    for (const line of [
      './src/error_handler.c',
      './tests/test_errors.py',
      './fail2ban.conf',
      './docs/ERROR.md',
      'test_levels.py::test_level_roundtrip[ERROR] PASSED',
      '✔ maps FATAL level to exit code 2 (0.2ms)',
      '    Handle ERROR responses from the payment API',
      '        raise ValidationError("port missing")',
      'timeout.go',
      'assert.h',
    ]) {
      // At most a loose mention, which counts only when a failed run has nothing better.
      expect({ line, kind: classifyLine(line)?.kind ?? 'none' }).toEqual({ line, kind: expect.stringMatching(/^(none|mention)$/) });
    }
  });

  test('library frames are told apart from the project’s', () => {
    expect(classifyLine('  File "/usr/lib/python3.11/json/decoder.py", line 337, in decode')?.library).toBe(true);
    expect(classifyLine('    at Module._compile (node:internal/modules/cjs/loader:1256:14)')?.library).toBe(true);
    expect(classifyLine('\tat java.base/java.lang.Integer.parseInt(Integer.java:652)')?.library).toBe(true);
    // Frames printed without `at` (the JUnit console launcher), and the test framework's own.
    expect(classifyLine('       java.base/jdk.internal.reflect.NativeMethodAccessorImpl.invoke0(Native Method)')?.library).toBe(true);
    expect(classifyLine('       org.junit.jupiter.api.Assertions.assertEquals(Assertions.java:1142)')?.library).toBe(true);
    expect(classifyLine('\tat org.junit.Assert.assertEquals(Assert.java:146)')?.library).toBe(true);
    expect(classifyLine('       org.apache.commons.cli.UtilTest.testQuotes(UtilTest.java:31)')).toMatchObject({
      kind: 'frame',
      library: false,
    });
    // An exception's own line is never a library's, whatever its package.
    expect(classifyLine('java.lang.AssertionError: expected:<3> but was:<4>')?.library).toBe(false);
    expect(classifyLine('    at money (/app/lib/format.js:6:29)')?.library).toBe(false);
  });

  test('no pattern backtracks: crafted long lines cost linear time', () => {
    // A hostile command chooses its output; the answer is built on the host's event loop.
    // Each of these pieces made at least one pattern quadratic before they were bounded.
    // Growth, not speed, is asserted: a line 8 times as long may cost at most 8 times as
    // much (with slack for a noisy machine); a quadratic pattern costs 64 times. Each cost is
    // the fastest of several rounds, the two lengths interleaved, so load affects both alike.
    const pieces = ['::', ': line 1: ', 'at x (', 'ERRORerror', '= 1 failed ', ': Assertion `', 'aa', 'File "', '==1== ', '#1 0x1 in '];
    const SHORT = 250;
    const FACTOR = 8;
    const cost = (line: string, reps: number): number => {
      const started = performance.now();
      for (let i = 0; i < reps; i++) {
        classifyLine(line);
        for (const rule of LINE_RULES) rule.re.test(line);
      }
      return performance.now() - started;
    };
    const growth: Record<string, number> = {};
    for (const piece of pieces) {
      const make = (n: number) => piece.repeat(Math.ceil(n / piece.length)).slice(0, n) + '!';
      const short = make(SHORT);
      const long = make(SHORT * FACTOR);
      let best = { short: Infinity, long: Infinity };
      for (let round = 0; round < 7; round++) {
        // The short line is run FACTOR times as often, so both timings are long enough to read.
        best = { short: Math.min(best.short, cost(short, 40 * FACTOR)), long: Math.min(best.long, cost(long, 40)) };
      }
      growth[piece] = Math.round(((FACTOR * best.long) / best.short) * 10) / 10;
    }
    // Per piece: the cost of one long line over the cost of one short one.
    for (const [piece, g] of Object.entries(growth))
      expect({ piece, growth: g, linear: g <= FACTOR * 2.5 }).toEqual({ piece, growth: g, linear: true });
  });
});
