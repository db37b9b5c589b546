/**
 * What a line of tool output is, by the formats toolchains actually print: one table of
 * patterns per family, each tested on real output (bench/corpus, test/unit/key-lines.test.ts).
 *
 * Kinds, from what a developer needs most:
 * - `verdict`: the run's last word (`3 errors`, `FAILED (failures=3)`, `Tests: 2 failed`).
 * - `pass`: a passing run's last word (`30 passed in 0.5s`, `ok  pkg 0.01s`, `OK (68 tests, 70 assertions)`).
 * - `error`: an error headline (`error[E0308]: ...`, `ValueError: ...`, `file:1:2: error:`).
 * - `test`: the name of a failing test (`not ok 15 - name`, `● suite › test`, `FAIL: test_x (...)`).
 * - `start`: a test starting (`=== RUN   TestX`): never kept; what follows it belongs to the headline after it.
 * - `detail`: what a failure compared (`Expected:`/`Received:`, `left:`/`right:`, pytest's `E` lines, `symbol:`).
 * - `location`: where (`--> src/main.rs:35:28`, `tests/test_a.py:12: AssertionError`).
 * - `frame`: a stack frame (Python, JavaScript, Java, sanitizers, valgrind); library frames are told apart.
 * - `diff`: a `-`/`+` line, kept only inside a failure.
 * - `warning`: ranked below every error; `mention`: an error word anywhere, for failed runs only.
 *
 * Every pattern is structural (a position, a colon, a format): a keyword inside a file name
 * (`error_handler.c`, `test_errors.py`) is no error.
 */

export type LineKind = 'verdict' | 'pass' | 'error' | 'test' | 'start' | 'detail' | 'location' | 'frame' | 'diff' | 'warning' | 'mention';

interface LineRule {
  family: string;
  kind: LineKind;
  re: RegExp;
  /**
   * Which failure the line belongs to when it is not a headline: `next` for lines printed
   * before their error (Python's traceback frames), `prev` (the default) for lines after it.
   */
  attach?: 'next';
  /**
   * A headline whose name goes on below it, on lines indented deeper (mocha's nested
   * suites and test title): up to this many lines.
   */
  title?: number;
}

/** `path:line` or `path:line:col` as compilers and runtimes print it. */
const FILE_LINE = String.raw`[^\s:()'"]+:\d+(?::\d+)?`;

export const LINE_RULES: readonly LineRule[] = [
  // ---------------------------------------------------------------- verdicts
  { family: 'gcc/clang', kind: 'verdict', re: /^\d+ errors? generated\.$/ },
  { family: 'javac', kind: 'verdict', re: /^\d+ errors?$/ },
  { family: 'cargo', kind: 'verdict', re: /^error: (could not compile|aborting due to)\b/ },
  { family: 'cargo test', kind: 'verdict', re: /^test result: FAILED\b|^error: test failed\b/ },
  { family: 'make', kind: 'verdict', re: /^g?make(\[\d+\])?: (\*\*\* .*\bError \d+|Target .* not remade)/ },
  { family: 'unittest', kind: 'verdict', re: /^FAILED \((failures|errors)=\d+/ },
  { family: 'pytest', kind: 'verdict', re: /^=+ [^=]{0,300}\b\d+ (failed|errors?)\b[^=]{0,300} =+$/ },
  {
    family: 'pytest -q',
    kind: 'verdict',
    re: /^(\d+ \w+, ){0,5}\d+ (failed|errors?)(, \d+ \w+){0,5} in [\d.]+s\b|^Interrupted: \d+ errors? during collection/,
  },
  { family: 'doctest', kind: 'verdict', re: /^\*\*\*Test Failed\*\*\* \d+ failures?\./ },
  { family: 'node --test (spec)', kind: 'verdict', re: /^ℹ fail [1-9]\d*$/ },
  { family: 'ctest', kind: 'verdict', re: /^\d+% tests passed, [1-9]\d* tests? failed out of \d+/ },
  { family: 'jest', kind: 'verdict', re: /^(Tests|Test Suites):\s+.*\b\d+ failed\b/ },
  { family: 'tap', kind: 'verdict', re: /^# fail [1-9]\d*$/ },
  { family: 'tsc', kind: 'verdict', re: /^Found \d+ errors?\b/ },
  { family: 'eslint', kind: 'verdict', re: /^✖ \d+ problems? \(\d+ errors?/ },
  { family: 'maven/gradle', kind: 'verdict', re: /^(\[(ERROR|INFO)\] )?BUILD FAILURE\b|^BUILD FAILED\b|^FAILURE: Build failed/ },
  { family: 'go test', kind: 'verdict', re: /^FAIL\s+\S+\s+([\d.]+s|\[(build|setup) failed\])$/ },
  { family: 'mocha', kind: 'verdict', re: /^\s*\d+ failing$/ },
  { family: 'phpunit', kind: 'verdict', re: /^Tests: \d+, Assertions: \d+, .*\b(Errors|Failures): \d+/ },
  {
    family: 'rspec',
    kind: 'verdict',
    re: /^\d+ examples?, ([1-9]\d* failures?|\d+ failures?(, \d+ pending)?, [1-9]\d* errors? occurred outside of examples)\b/,
  },
  { family: 'minitest', kind: 'verdict', re: /^\d+ runs, \d+ assertions, (\d+ failures, [1-9]\d* errors|[1-9]\d* failures, \d+ errors)\b/ },
  {
    family: 'test-unit',
    kind: 'verdict',
    re: /^\d+ tests, \d+ assertions, (\d+ failures, [1-9]\d* errors|[1-9]\d* failures, \d+ errors)\b/,
  },
  { family: 'ctest', kind: 'verdict', re: /^The following tests FAILED:$/ },
  // The JUnit Platform console launcher's closing table.
  { family: 'junit console', kind: 'verdict', re: /^\[\s*[1-9]\d* (tests|containers) failed\s*\]$/ },
  { family: 'googletest', kind: 'verdict', re: /^\s*\d+ FAILED TESTS?$/ },
  {
    family: 'maven surefire',
    kind: 'verdict',
    re: /^(\[(ERROR|WARNING|INFO)\] )?Tests run: \d+, (Failures: [1-9]\d*|Failures: \d+, Errors: [1-9]\d*)\b(?!.*\bTime elapsed)/,
  },
  { family: 'sanitizer', kind: 'verdict', re: /^SUMMARY: \w+Sanitizer: / },
  { family: 'valgrind', kind: 'verdict', re: /^==\d+== ERROR SUMMARY: [1-9]/ },
  { family: 'npm', kind: 'verdict', re: /^npm (ERR!|error) code \w/ },
  { family: 'cmake', kind: 'verdict', re: /^-- Configuring incomplete, errors occurred!/ },
  {
    family: 'shell',
    kind: 'verdict',
    re: /\b(Segmentation fault|Aborted|Bus error|Floating point exception|Illegal instruction)( \(core dumped\))?$/,
  },

  // ---------------------------------------------------------------- a passing run's verdict
  {
    family: 'pytest/ctest/mocha/cargo',
    kind: 'pass',
    re: /^=* ?\d+ passed(, \d+ \w+){0,5} in [\d.]+s\b|^\d+% tests passed, 0 tests failed out of \d+$|^\s*\d+ passing \(\d+m?s\)$|^test result: ok\. \d+ passed; 0 failed/,
  },
  { family: 'go test', kind: 'pass', re: /^ok\s+\S+\s+([\d.]+s|\(cached\))/ },
  { family: 'phpunit/unittest', kind: 'pass', re: /^OK \(\d+ tests?, \d+ assertions?\)$|^OK( \((skipped|expected failures)=\d+.*\))?$/ },
  { family: 'rspec', kind: 'pass', re: /^\d+ examples?, 0 failures(, \d+ pending)?$/ },
  { family: 'minitest', kind: 'pass', re: /^\d+ runs, \d+ assertions, 0 failures, 0 errors\b/ },
  { family: 'test-unit', kind: 'pass', re: /^\d+ tests, \d+ assertions, 0 failures, 0 errors\b/ },
  { family: 'junit console', kind: 'pass', re: /^\[\s*\d+ tests successful\s*\]$/ },
  { family: 'googletest', kind: 'pass', re: /^\[ {2}PASSED {2}\] \d+ tests?\.$/ },
  { family: 'maven surefire', kind: 'pass', re: /^(\[INFO\] )?Tests run: \d+, Failures: 0, Errors: 0\b(?!.*\bTime elapsed)/ },
  { family: 'jest/node', kind: 'pass', re: /^Tests:\s+\d+ passed, \d+ total$|^ℹ pass \d+$/ },

  // ---------------------------------------------------------------- failing tests
  { family: 'tap', kind: 'test', re: /^\s*not ok \d+/ },
  { family: 'jest', kind: 'test', re: /^\s*● (?!Console\b)\S/ },
  { family: 'jest/vitest/testdox', kind: 'test', re: /^\s*(FAIL|[×✕✗✘]) \S/ },
  // go test -v prints a test's t.Errorf lines between its `=== RUN` and its `--- FAIL`.
  { family: 'go test -v', kind: 'start', re: /^=== (RUN|CONT|NAME) +\S/ },
  { family: 'cargo test', kind: 'test', re: /^test \S+ \.\.\. FAILED$|^---- \S+ stdout ----$/ },
  { family: 'unittest', kind: 'test', re: /^(FAIL|ERROR): \S+ \(|\) \.\.\. (FAIL|ERROR)$/ },
  { family: 'pytest', kind: 'test', re: /^_{3,} \S[^\n]{0,300} _{3,}$|^(FAILED|ERROR) [^\s:]+::\S|::[^\s:]+ (FAILED|ERROR)\b/ },
  { family: 'go test', kind: 'test', re: /^\s*--- FAIL: / },
  { family: 'mocha', kind: 'test', re: /^\s+\d+\) \S/, title: 4 },
  { family: 'phpunit', kind: 'test', re: /^\d+\) [\w\\]+::\w/ },
  // Ruby's test-unit: `Failure: test_x(TestClass)`, `Error: test_x(TestClass): NameError: ...`.
  { family: 'test-unit', kind: 'test', re: /^(Failure|Error): \S+\([\w:]+\)(:|$)/ },
  // The JUnit Platform console launcher's `Failures (N):` list: `  JUnit Jupiter:UtilTest:testX()`.
  { family: 'junit console', kind: 'test', re: /^\s*JUnit [A-Z][\w ]{0,40}:\S/ },
  { family: 'unity (C)', kind: 'test', re: new RegExp(String.raw`^${FILE_LINE}:\w+:FAIL\b`) },
  { family: 'googletest', kind: 'test', re: /^\[ {2}FAILED {2}\] (?!\d+ tests?,)\S/ },
  { family: 'node --test (spec)', kind: 'test', re: /^\s*✖ (?!failing tests:)\S/ },
  { family: 'doctest', kind: 'test', re: /^File "[^"]+", line \d+, in \S+$/ },
  {
    family: 'ctest',
    kind: 'test',
    re: /\*\*\*(Failed|Exception|Timeout)\b|^\s+\d+ - \S+ \((Failed|SEGFAULT|Timeout|Subprocess aborted|Child aborted|Exception)\)$/,
  },

  // ---------------------------------------------------------------- errors
  { family: 'gcc/clang/javac/go', kind: 'error', re: new RegExp(String.raw`^${FILE_LINE}: (fatal error|error)\b`) },
  { family: 'msbuild/tsc', kind: 'error', re: /^[^\s(]+\(\d+,\d+\): (fatal )?error\b/ },
  { family: 'tsc --pretty', kind: 'error', re: new RegExp(String.raw`^${FILE_LINE} - error TS\d+: `) },
  { family: 'c++', kind: 'error', re: /^terminate called after throwing an instance of '/ },
  { family: 'perl', kind: 'error', re: /^[^\n]{1,300} at \S+ line \d+\.$/ },
  { family: 'rustc', kind: 'error', re: /^error(\[E\d{4}\])?: / },
  { family: 'rust', kind: 'error', re: /^thread '[^']*'( \(\d+\))? panicked at / },
  {
    family: 'python/java/js',
    kind: 'error',
    re: /^\s*(Uncaught )?([\w$]+\.)*([A-Z][\w$]*(Error|Exception|Failure|Exit)|Error|Exception)\b( \[\w+\])?(: |:?$)/,
  },
  { family: 'java', kind: 'error', re: /^Exception in thread "|^Caused by: / },
  // The console launcher's exception under a failed test: `    => org.opentest4j.AssertionFailedError: ...`.
  { family: 'junit console', kind: 'error', re: /^\s+=> ([\w$]+\.)*[A-Z][\w$]*(Error|Exception|Failure)\b/ },
  // rspec: a spec file that did not load, a suite hook that failed (no example ran).
  { family: 'rspec', kind: 'error', re: /^An error occurred (while loading \S|in a `(before|after)\(:(suite|context|all)\)` hook)/ },
  {
    family: 'sanitizer',
    kind: 'detail',
    re: /^(READ|WRITE) of size \d+ at |^\S+ is located \d+ bytes |^(previously )?(allocated|freed) by thread \S+ here:$/,
  },
  { family: 'node assert', kind: 'detail', re: /^\s*(Expected values? to be [\w -]+:|The expression evaluated to a falsy value:)/ },
  { family: 'sanitizer', kind: 'error', re: /^==\d+==\s*ERROR: \w+Sanitizer: |^\S+ runtime error: / },
  {
    family: 'valgrind',
    kind: 'error',
    re: /^==\d+== (Invalid (read|write|free)|Conditional jump|Use of uninitialised|Mismatched free|Syscall param|Process terminating|\S+ bytes in \S+ blocks are definitely lost)/,
  },
  { family: 'assert', kind: 'error', re: /: Assertion [`'].{0,300}' failed\.$/ },
  { family: 'cmake', kind: 'error', re: /^CMake Error\b/ },
  {
    family: 'shell',
    kind: 'error',
    re: /: line \d+: ([^:]{1,300}: )?(unbound variable|command not found|No such file or directory|Permission denied)|: line \d+: syntax error|^[^\s:]*sh: (\d+: )?[^:]{1,300}: (not found|No such file or directory|Permission denied)$/,
  },
  { family: 'eslint', kind: 'error', re: /^\s+\d+:\d+\s+error\s+/ },
  { family: 'go', kind: 'error', re: /^panic: |^fatal error: / },
  // The compiler's and vet's errors (go test prints them under `# pkg`): a file at the start of the line.
  { family: 'go build', kind: 'error', re: /^(\.{1,2}\/)?[\w./-]+\.go:\d+(:\d+)?: \S/ },
  { family: 'googletest', kind: 'error', re: new RegExp(String.raw`^${FILE_LINE}: Failure$`) },
  { family: 'generic', kind: 'error', re: /^(error|fatal|ERROR|FATAL|Error|FAILED|FAIL)(\[[\w-]+\])?: / },
  { family: 'tool: error', kind: 'error', re: /^[\w./+-]+: (fatal )?error: |\bundefined reference to / },
  // A log level at the start of a line, after a timestamp or bracketed fields: never inside a
  // sentence, a test name (`test_levels[ERROR] PASSED`) or a commit message.
  {
    family: 'log levels',
    kind: 'error',
    re: /^([[(]?[\d][\d:.,TZ+/-]{5,30}[\])]?\s+|\[[^\]\s]{1,40}\]\s*){0,3}[[(<]?(ERROR|FATAL|CRITICAL|SEVERE|PANIC)[\])>:|]?\s+\S|\blevel=(error|fatal|critical)\b|"level"\s*:\s*"(error|fatal|critical)"/,
  },

  // ---------------------------------------------------------------- what a failure compared
  {
    family: 'jest/tap/node',
    kind: 'detail',
    // The actual value under every label a runner gives it (rspec's `got:`, testify's padded `actual  :`).
    re: /^\s*(Expected|Received|expected|received|actual|Actual|Got|got|want|Want)( value| substring| length| path)?\s*:(\s*\S|$)/,
  },
  // rspec: the line that failed, and a matcher's sentence (`expected [1, 2] to include 3`).
  { family: 'rspec', kind: 'detail', re: /^\s*Failure\/Error: \S|^\s*expected \S.{0,300}? (not )?to \w/ },
  { family: 'rust', kind: 'detail', re: /^\s*(left|right):\s*\S|^assertion `.*` failed/ },
  { family: 'pytest', kind: 'detail', re: /^E\s+\S|^>\s{2,}\S/ },
  { family: 'go test', kind: 'detail', re: /^\s+[\w.-]+\.go:\d+: \S/ },
  { family: 'phpunit', kind: 'detail', re: /^\s*Failed asserting that / },
  // Ruby's assert_raises (minitest, test-unit): nothing raised, or another exception (its class and message below).
  {
    family: 'minitest/test-unit',
    kind: 'detail',
    re: /^\S.{0,300} expected but nothing was raised\.$|^<[\w:]+> exception (was )?expected but none was thrown\.$|^\S.{0,300} exception expected, not$|^(Class|Message): <.{0,300}>$/,
  },
  // test-unit's assert_equal: `<1> expected but was`, then the actual value alone, in angle brackets.
  { family: 'test-unit', kind: 'detail', re: /^<.{0,300}> expected but was$|^<.{0,300}>$/ },
  // Which side of the diff below is which.
  { family: 'phpunit', kind: 'detail', re: /^--- Expected$|^\+\+\+ Actual$/ },
  {
    family: 'googletest/junit',
    kind: 'detail',
    re: /^\s*(Expected equality of these values:|Value of: |Which is: )|\bexpected:? ?<.*> but was:? ?<.*>/,
  },
  { family: 'doctest', kind: 'detail', re: /^(Failed example|Exception raised):$|^Got nothing$/ },
  { family: 'rustc', kind: 'detail', re: /^\s*\d*\s*\|[\s|_]*\^[-^~_]* \S/ },
  // node --test's TAP says where a test is in its YAML: a location, not what it compared.
  { family: 'node --test (TAP)', kind: 'location', re: /^\s+location: '[^'\s]+:\d+:\d+'$/ },
  { family: 'javac/tap', kind: 'detail', re: /^\s*(symbol|location|required|found|reason):\s+\S|^\s+error: '.+'$/ },
  { family: 'c++', kind: 'detail', re: /^\s+what\(\):\s/ },
  { family: 'jest', kind: 'detail', re: /^\s*Snapshot name: / },
  {
    family: 'cargo test',
    kind: 'detail',
    re: /^note: (test did not panic as expected|panic did not contain expected string)|^\s*panic message: /,
  },
  { family: 'npm', kind: 'detail', re: /^npm (ERR!|error) / },
  { family: 'assert', kind: 'detail', re: /^\s*(AssertionError\b|assert\s)/ },

  // ---------------------------------------------------------------- where
  { family: 'rustc', kind: 'location', re: /^\s*--> \S+:\d+:\d+/ },
  { family: 'node --test (spec)', kind: 'location', re: /^\s*test at \S+:\d+:\d+$/ },
  { family: 'g++', kind: 'location', re: new RegExp(String.raw`^${FILE_LINE}:\s+required from here$`), attach: 'next' },
  { family: 'eslint (file header)', kind: 'location', re: /^(\/|\.{0,2}\/)?[\w@.+-]+(\/[\w@.+-]+)*\.(c|m)?[jt]sx?$/, attach: 'next' },
  { family: 'pytest (short traceback)', kind: 'frame', re: new RegExp(String.raw`^${FILE_LINE}: in \S+$`) },
  { family: 'pytest/unittest', kind: 'location', re: new RegExp(String.raw`^${FILE_LINE}: [\w.]*(Error|Exception|Failure)\w*$`) },
  { family: 'python', kind: 'frame', re: /^\s*File "[^"]+", line \d+/, attach: 'next' },
  { family: 'python', kind: 'frame', re: /^Traceback \(most recent call last\):$/, attach: 'next' },
  { family: 'javascript', kind: 'frame', re: /^\s*at (?:[^()]{1,300} \()?[^\s()]+:\d+:\d+\)?$/ },
  { family: 'node test (TAP stack)', kind: 'frame', re: /^\s+(async )?[\w$.<>]+( \[as \w+\])? \((\/|node:)[^()\s]+:\d+:\d+\)$/ },
  { family: 'java', kind: 'frame', re: /^\s*at [\w$.<>/]+\([\w$]+\.\w+:\d+\)$/ },
  // The console launcher prints a stack's frames without `at`.
  {
    family: 'junit console',
    kind: 'frame',
    re: /^\s+([\w.]+\/)?[\w$]+(\.[\w$<>]+)+\(([\w$]+\.(java|kt|scala|groovy):\d+|Native Method)\)$/,
  },
  { family: 'ruby', kind: 'frame', re: /^\s*(# |from )?[^\s:]+\.rb:\d+:in [`'][^'\n]{1,300}'$/ },
  // A goroutine's frame: the function (a module's: its path has a dot), then its file on a tab-indented line.
  { family: 'go', kind: 'frame', re: /^\t\S+\.go:\d+( \+0x[0-9a-f]+)?$|^[\w-]+\.[\w.-]+\/\S*\.[\w*()]+\(.*\)$/ },
  { family: 'phpunit', kind: 'location', re: /^\s*(\/|[\w.-]+\/)[^\s:]*\.php:\d+$/ },
  { family: 'sanitizer', kind: 'frame', re: /^\s*#\d+ 0x[0-9a-f]+ in \S+/ },
  { family: 'valgrind', kind: 'frame', re: /^==\d+==\s+(at|by) 0x[0-9A-F]+: / },

  // ---------------------------------------------------------------- ranked below errors
  {
    family: 'compilers/linters',
    kind: 'warning',
    re: new RegExp(
      String.raw`^${FILE_LINE}: warning\b|^[^\s(]+\(\d+,\d+\): warning\b|^warning(\[\w+\])?: |^\s+\d+:\d+\s+warning\s|(^|[\s[|])(WARN|WARNING)([\]:|]|\s)|\b[A-Z]\w{0,60}Warning: `,
    ),
  },
  { family: 'diff', kind: 'diff', re: /^\s*[-+](?=\s*[^-+=\s])/ },
  {
    family: 'loose error words',
    kind: 'mention',
    re: /\b(error|errors|exception|failed|failure|fatal|traceback|panic|denied|refused|cannot|can't|unable|not found|no such|segmentation fault|killed|timed out|undefined reference)\b/i,
  },
];

/** Frames in a runtime, a standard library or a dependency: not where a developer fixes things. */
const LIBRARY_FRAME =
  /\(node:|node:internal|node_modules|vgpreload|\/usr\/local\/go\/|\/go\/pkg\/mod\/|\/lib\/ruby\/|\/gems\/|<internal:|\/vendor\/|\/usr\/libexec\/valgrind|\(internal\/|\(<anonymous>\)|\/usr\/(lib|include|share)\/|\/lib\/python\d|site-packages|dist-packages|<frozen |java\.base\/|jdk\.internal|\bat (java|javax|jdk|sun)\.|^\s*(at )?(java|javax|jdk|sun|org\.junit|junit\.framework|org\.opentest4j|org\.hamcrest|org\.assertj)\.[\w$.<>]+\(|\/rustc\/|\.cargo\/registry|\/libc\.so|libasan|libc_start|_start\b|\?\?:/;

/** Boilerplate around errors that says nothing itself (maven's and npm's footers, usage text). */
const NOISE =
  /^\[ERROR\]\s*$|^\[ERROR\] (-> \[Help 1\]|To see the full stack trace|Re-run Maven using|For more information about the errors|\[Help 1\] http)|^npm (ERR!|error)\s*$|^npm (ERR!|error) +\[--|^npm (ERR!|error) (A complete log of this run|aliases:|Run "npm help)/;

/** Any rule at all: one pass of one pattern rejects most lines of a long log fast. */
const ANY_RULE = new RegExp(LINE_RULES.map((r) => `(?:${r.re.source})`).join('|'), 'i');

/** Longer lines are classified by their first this many characters. */
const CLASSIFY_CHARS = 2000;

export interface LineClass {
  kind: LineKind;
  family: string;
  attach: 'next' | 'prev';
  /** A frame, a location or an error in a runtime, a standard library or a dependency. */
  library: boolean;
  /** Where in the line the rule matched (a long line is clipped around it). */
  at: number;
  /** A headline's name goes on below it, on up to this many lines indented deeper. */
  title?: number;
}

/** The first rule that matches the line, or undefined for an ordinary line. */
export function classifyLine(line: string): LineClass | undefined {
  const text = line.length > CLASSIFY_CHARS ? line.slice(0, CLASSIFY_CHARS) : line;
  if (!text.trim() || !ANY_RULE.test(text) || NOISE.test(text)) return undefined;
  for (const rule of LINE_RULES) {
    const m = rule.re.exec(text);
    if (!m) continue;
    // An error located in a library's header (a C++ template's) ranks after the project's own.
    const library =
      (rule.kind === 'frame' || rule.kind === 'location' || (rule.kind === 'error' && m.index === 0)) &&
      LIBRARY_FRAME.test(text.slice(0, 200));
    return {
      kind: rule.kind,
      family: rule.family,
      attach: rule.attach ?? 'prev',
      library,
      at: m.index,
      ...(rule.title ? { title: rule.title } : {}),
    };
  }
  return undefined;
}
