import { keyLines } from '../../../src/answer/key-lines.js';

/**
 * Key lines of test runners' reports, from real runs (bench/corpus/out, cut down): each
 * failure keeps its name, what it compared and where; the verdict is kept; a budget gives
 * every failure its headline before any failure its second frame.
 */

describe('key lines of test runners', () => {
  test('go test: each --- FAIL with its t.Errorf lines, and the package verdict', () => {
    const out = [
      '--- FAIL: TestNullUUIDMarshalJSON (0.00s)',
      '    null_test.go:196: expected json data "12345678-abcd-1234-abcd-0123456789ab", got "12345678-abcd-1234-0101-0123456789ab"',
      '--- FAIL: TestValue (0.00s)',
      '    sql_test.go:111: Value() did not return expected string',
      '--- FAIL: TestSHA1 (0.00s)',
      '    uuid_test.go:421: SHA1: got "886313e1" expected "886313e1-3b8a"',
      'FAIL',
      'FAIL\tgithub.com/google/uuid\t1.510s',
      'FAIL',
    ].join('\n');
    expect(keyLines(out)).toEqual([
      '--- FAIL: TestNullUUIDMarshalJSON (0.00s)',
      'null_test.go:196: expected json data "12345678-abcd-1234-abcd-0123456789ab", got "12345678-abcd-1234-0101-0123456789ab"',
      '--- FAIL: TestValue (0.00s)',
      'sql_test.go:111: Value() did not return expected string',
      '--- FAIL: TestSHA1 (0.00s)',
      'uuid_test.go:421: SHA1: got "886313e1" expected "886313e1-3b8a"',
      'FAIL\tgithub.com/google/uuid\t1.510s',
    ]);
  });

  test('go test -v: the t.Errorf lines printed between a test’s === RUN and its --- FAIL belong to that test', () => {
    const out = [
      '=== RUN   TestJSON',
      '    json_test.go:30: got uuid.S{ID1:uuid.UUID{0xf4}}, want uuid.S{ID1:uuid.UUID{0x85}}',
      '--- FAIL: TestJSON (0.00s)',
      '=== RUN   TestNullUUIDScan',
      '--- PASS: TestNullUUIDScan (0.00s)',
      '=== RUN   TestNullUUIDMarshalJSON',
      '    null_test.go:196: expected json data "abcd", got "0101"',
      '--- FAIL: TestNullUUIDMarshalJSON (0.00s)',
      '=== RUN   TestValue',
      '--- PASS: TestValue (0.00s)',
      'FAIL',
      'FAIL\tgithub.com/google/uuid\t2.521s',
    ].join('\n');
    // With room for one failure's lines, the first one's own detail comes with it.
    expect(keyLines(out, { budget: { lines: 3, chars: 1000 } })).toEqual([
      'json_test.go:30: got uuid.S{ID1:uuid.UUID{0xf4}}, want uuid.S{ID1:uuid.UUID{0x85}}',
      '--- FAIL: TestJSON (0.00s)',
      'FAIL\tgithub.com/google/uuid\t2.521s',
    ]);
    expect(keyLines(out)).toEqual([
      'json_test.go:30: got uuid.S{ID1:uuid.UUID{0xf4}}, want uuid.S{ID1:uuid.UUID{0x85}}',
      '--- FAIL: TestJSON (0.00s)',
      'null_test.go:196: expected json data "abcd", got "0101"',
      '--- FAIL: TestNullUUIDMarshalJSON (0.00s)',
      'FAIL\tgithub.com/google/uuid\t2.521s',
    ]);
  });

  test('go test -v: a subtest’s t.Errorf line, printed before its siblings start, belongs to its --- FAIL below them', () => {
    const out = [
      '=== RUN   TestValidate',
      '=== RUN   TestValidate/Valid_UUID',
      '=== RUN   TestValidate/Invalid_Length',
      '    uuid_test.go:631: Validate("123") = invalid UUID length: 3, want invalid UUID length: 4',
      '=== RUN   TestValidate/Invalid_URN_Prefix',
      '=== RUN   TestValidate/Invalid_Brackets',
      '--- FAIL: TestValidate (0.00s)',
      '    --- PASS: TestValidate/Valid_UUID (0.00s)',
      '    --- FAIL: TestValidate/Invalid_Length (0.00s)',
      '    --- PASS: TestValidate/Invalid_URN_Prefix (0.00s)',
      '    --- PASS: TestValidate/Invalid_Brackets (0.00s)',
      '=== RUN   TestVersion',
      '--- PASS: TestVersion (0.00s)',
      'FAIL',
      'FAIL\tgithub.com/google/uuid\t1.178s',
      'FAIL',
    ].join('\n');
    // In the output's order: the subtest's line was printed before its parent's report.
    expect(keyLines(out)).toEqual([
      'uuid_test.go:631: Validate("123") = invalid UUID length: 3, want invalid UUID length: 4',
      '--- FAIL: TestValidate (0.00s)',
      '--- FAIL: TestValidate/Invalid_Length (0.00s)',
      'FAIL\tgithub.com/google/uuid\t1.178s',
    ]);
  });

  test('go test -v: a test’s lines far above its --- FAIL (a value it printed between) are still its own', () => {
    const out = [
      '=== RUN   TestTable',
      '    table_test.go:20: case 1: got 3, want 4',
      '    table_test.go:24: the table:',
      ...Array.from({ length: 12 }, (_, i) => `        {in: ${i}, want: ${i + 1}},`),
      '--- FAIL: TestTable (0.00s)',
      'FAIL',
      'FAIL\texample.com/table\t0.004s',
    ].join('\n');
    expect(keyLines(out)).toContain('table_test.go:20: case 1: got 3, want 4');
  });

  test('test-unit (Ruby): each Failure or Error with its location, what it expected and what it got, and the verdict', () => {
    const out = [
      '    test_broken:\t\t\t\t\tE',
      '===============================================================================',
      'Error: test_broken(TestRakeFileList):',
      "  NoMethodError: undefined method `no_such_method' for []:Rake::FileList",
      "/workspace/test/test_rake_file_list.rb:46:in `test_broken'",
      '===============================================================================',
      ': (0.002817)',
      '    test_create_with_args:\t\t\t\tF',
      '===============================================================================',
      'Failure: test_create_with_args(TestRakeFileList)',
      "/workspace/test/test_rake_file_list.rb:51:in `test_create_with_args'",
      '     50:     fl = FileList.new("*.c", "x")',
      '  => 51:     assert_equal ["abc.c", "x.c", "xyz.c", "y"].sort,',
      '     52:       fl.sort',
      '<["abc.c", "x.c", "xyz.c", "y"]> expected but was',
      '<["abc.c", "x", "x.c", "xyz.c"]>',
      '===============================================================================',
      ': (0.001721)',
      ...Array.from({ length: 30 }, (_, i) => `    test_more_${i}:\t\t\t\t.: (0.001)`),
      'Finished in 0.927064785 seconds.',
      '-------------------------------------------------------------------------------',
      '120 tests, 314 assertions, 1 failures, 1 errors, 0 pendings, 0 omissions, 0 notifications',
      '98.3333% passed',
    ].join('\n');
    expect(keyLines(out)).toEqual([
      'Error: test_broken(TestRakeFileList):',
      "NoMethodError: undefined method `no_such_method' for []:Rake::FileList",
      "/workspace/test/test_rake_file_list.rb:46:in `test_broken'",
      'Failure: test_create_with_args(TestRakeFileList)',
      "/workspace/test/test_rake_file_list.rb:51:in `test_create_with_args'",
      '<["abc.c", "x.c", "xyz.c", "y"]> expected but was',
      '<["abc.c", "x", "x.c", "xyz.c"]>',
      '120 tests, 314 assertions, 1 failures, 1 errors, 0 pendings, 0 omissions, 0 notifications',
    ]);
  });

  test('JUnit console launcher: each entry of its Failures list with the exception and the test’s own frame, and its table’s failed count', () => {
    const out = [
      '│  ├─ testStripLeadingAndTrailingQuotes() ✘ expected: <fooo> but was: <foo>',
      ...Array.from({ length: 20 }, (_, i) => `│  ├─ testOther${i}() ✔`),
      'Failures (2):',
      '  JUnit Jupiter:UtilTest:testStripLeadingAndTrailingQuotes()',
      "    MethodSource [className = 'org.apache.commons.cli.UtilTest', methodName = 'testStripLeadingAndTrailingQuotes', methodParameterTypes = '']",
      '    => org.opentest4j.AssertionFailedError: expected: <fooo> but was: <foo>',
      '       org.junit.jupiter.api.AssertionFailureBuilder.build(AssertionFailureBuilder.java:151)',
      '       org.junit.jupiter.api.AssertEquals.failNotEqual(AssertEquals.java:197)',
      '       org.junit.jupiter.api.Assertions.assertEquals(Assertions.java:1142)',
      '       org.apache.commons.cli.UtilTest.testStripLeadingAndTrailingQuotes(UtilTest.java:31)',
      '       java.base/jdk.internal.reflect.NativeMethodAccessorImpl.invoke0(Native Method)',
      '       [...]',
      '  JUnit Jupiter:OptionGroupTest:testNoOptionsExtraArgs()',
      "    MethodSource [className = 'org.apache.commons.cli.OptionGroupTest', methodName = 'testNoOptionsExtraArgs', methodParameterTypes = '']",
      '    => java.lang.NullPointerException: Cannot invoke "String.length()" because "<local3>" is null',
      '       org.apache.commons.cli.OptionGroupTest.testNoOptionsExtraArgs(OptionGroupTest.java:85)',
      '       java.base/jdk.internal.reflect.NativeMethodAccessorImpl.invoke0(Native Method)',
      '       java.base/java.lang.reflect.Method.invoke(Method.java:569)',
      '       org.junit.platform.commons.util.ReflectionUtils.invokeMethod(ReflectionUtils.java:727)',
      '       [...]',
      '',
      'Test run finished after 2366 ms',
      '[       745 tests successful      ]',
      '[         2 tests failed          ]',
    ].join('\n');
    expect(keyLines(out)).toEqual([
      'JUnit Jupiter:UtilTest:testStripLeadingAndTrailingQuotes()',
      '=> org.opentest4j.AssertionFailedError: expected: <fooo> but was: <foo>',
      'org.apache.commons.cli.UtilTest.testStripLeadingAndTrailingQuotes(UtilTest.java:31)',
      'JUnit Jupiter:OptionGroupTest:testNoOptionsExtraArgs()',
      '=> java.lang.NullPointerException: Cannot invoke "String.length()" because "<local3>" is null',
      'org.apache.commons.cli.OptionGroupTest.testNoOptionsExtraArgs(OptionGroupTest.java:85)',
      '[         2 tests failed          ]',
    ]);
  });

  test('minitest: an assert_raises that saw nothing raised, or another exception, keeps what it expected and what came', () => {
    const out = [
      'Run options: --seed 18942',
      '',
      '# Running:',
      '',
      ...Array.from({ length: 30 }, (_, i) => `WarningTest#test_other_${i} = 0.00 s = .`),
      '',
      '  1) Failure:',
      'WarningTest#test_warning_process_block_return_raise [test/test_warning.rb:620]:',
      'RuntimeError expected but nothing was raised.',
      '',
      '  2) Failure:',
      'WarningTest#test_warning_raise_other [test/test_warning.rb:640]:',
      '[RuntimeError] exception expected, not',
      'Class: <ArgumentError>',
      'Message: <"wrong number of arguments (given 1, expected 0)">',
      '---Backtrace---',
      "test/test_warning.rb:641:in `block in test_warning_raise_other'",
      '---------------',
      '',
      '31 runs, 115 assertions, 2 failures, 0 errors, 0 skips',
    ].join('\n');
    const key = keyLines(out);
    expect(key).toContain('RuntimeError expected but nothing was raised.');
    expect(key).toContain('[RuntimeError] exception expected, not');
    expect(key).toContain('Class: <ArgumentError>');
    expect(key).toContain('Message: <"wrong number of arguments (given 1, expected 0)">');
  });

  test('go test: a panic keeps the project’s frames (the innermost and the test’s), not the runtime’s', () => {
    const out = [
      '--- FAIL: TestJSON (0.00s)',
      'panic: runtime error: slice bounds out of range [:17] with length 16 [recovered]',
      '\tpanic: runtime error: slice bounds out of range [:17] with length 16',
      '',
      'goroutine 6 [running]:',
      'testing.tRunner.func1.2({0x5c2ec0, 0xc00001c030})',
      '\t/usr/lib/go-1.19/src/testing/testing.go:1396 +0x24e',
      'github.com/google/uuid.encodeHex({0xc00008c090?, 0xc000087a00?}, {0xf4, 0x7a})',
      '\t/workspace/uuid.go:297 +0x211',
      'encoding/json.Marshal({0x596420, 0xc00011e000})',
      '\t/usr/lib/go-1.19/src/encoding/json/encode.go:160 +0x45',
      'github.com/google/uuid.TestJSON(0xc00011a1a0)',
      '\t/workspace/json_test.go:21 +0x7a',
      'FAIL\tgithub.com/google/uuid\t0.010s',
    ].join('\n');
    const key = keyLines(out);
    expect(key).toEqual(
      expect.arrayContaining([
        '--- FAIL: TestJSON (0.00s)',
        'panic: runtime error: slice bounds out of range [:17] with length 16 [recovered]',
        '/workspace/uuid.go:297 +0x211',
        '/workspace/json_test.go:21 +0x7a',
        'FAIL\tgithub.com/google/uuid\t0.010s',
      ]),
    );
    expect(key.filter((k) => k.includes('/usr/lib/go-'))).toEqual([]);
  });

  test('mocha (spec): the numbered headline with the test title below it, the assertion, its message after a blank line, the test frame, the verdict', () => {
    const out = [
      '  45 passing (21ms)',
      '  2 failing',
      '',
      '  1) mimeTypes',
      '       .extension(type)',
      '         should return extension for mime type:',
      '',
      '      AssertionError [ERR_ASSERTION]: Expected values to be strictly equal:',
      '',
      "'htm' !== 'html'",
      '',
      '      + expected - actual',
      '',
      '      -htm',
      '      +html',
      '      ',
      '      at Context.<anonymous> (test/test.js:111:14)',
      '      at process.processImmediate (node:internal/timers:476:21)',
      '',
    ].join('\n');
    expect(keyLines(out)).toEqual([
      '2 failing',
      '1) mimeTypes',
      '.extension(type)',
      'should return extension for mime type:',
      'AssertionError [ERR_ASSERTION]: Expected values to be strictly equal:',
      "'htm' !== 'html'",
      '+ expected - actual',
      '-htm',
      '+html',
      'at Context.<anonymous> (test/test.js:111:14)',
    ]);
  });

  test('PHPUnit: a data set’s headline, what it compared, the diff, the test file’s line, the verdict', () => {
    const out = [
      'There were 2 failures:',
      '',
      "1) JmesPath\\Tests\\ComplianceTest::testPassesCompliance with data set #856 (array(-1, 0), 'join(', ', strings)')",
      'Expected: "a, b, c"',
      '',
      'Failed asserting that two strings are equal.',
      '--- Expected',
      '+++ Actual',
      '@@ @@',
      "-'a, b, c'",
      "+'b, c'",
      '',
      '/workspace/tests/ComplianceTest.php:85',
      '',
      '2) JmesPath\\Tests\\FnDispatcherTest::testJoinOfEmptyArrayIsEmptyString',
      'Failed asserting that two strings are identical.',
      '',
      '/workspace/tests/FnDispatcherTest.php:66',
      '',
      'FAILURES!',
      'Tests: 3746, Assertions: 8086, Failures: 2.',
    ].join('\n');
    expect(keyLines(out)).toEqual([
      "1) JmesPath\\Tests\\ComplianceTest::testPassesCompliance with data set #856 (array(-1, 0), 'join(', ', strings)')",
      'Expected: "a, b, c"',
      'Failed asserting that two strings are equal.',
      '--- Expected',
      '+++ Actual',
      "-'a, b, c'",
      "+'b, c'",
      '/workspace/tests/ComplianceTest.php:85',
      '2) JmesPath\\Tests\\FnDispatcherTest::testJoinOfEmptyArrayIsEmptyString',
      'Failed asserting that two strings are identical.',
      '/workspace/tests/FnDispatcherTest.php:66',
      'Tests: 3746, Assertions: 8086, Failures: 2.',
    ]);
  });

  test('PHPUnit --testdox: the ✘ headline, and what it compared inside the box margin', () => {
    const out = [
      ' ✔ Compliance error case uses file option',
      ' ✘ Passes compliance with data set #706',
      '   │',
      '   │ Result: 11',
      '   │ Expected: 2.75',
      '   │',
      '   │ Failed asserting that 11 matches expected 2.75.',
      '   │',
      '   │ /workspace/tests/ComplianceTest.php:85',
      '   │',
      '',
      'ERRORS!',
      'Tests: 3746, Assertions: 8082, Errors: 4, Failures: 4, Warnings: 1.',
    ].join('\n');
    expect(keyLines(out)).toEqual([
      '✘ Passes compliance with data set #706',
      'Expected: 2.75',
      'Failed asserting that 11 matches expected 2.75.',
      '/workspace/tests/ComplianceTest.php:85',
      'Tests: 3746, Assertions: 8082, Errors: 4, Failures: 4, Warnings: 1.',
    ]);
  });

  test('minitest: an Error’s test name, exception and the project’s frames; a Failure’s expected and actual; the verdict', () => {
    const out = [
      '  1) Error:',
      'PartialTest#test_view_partial_inherits_context:',
      "NoMethodError: undefined method `to_str' for :One:Symbol",
      '',
      '    self.escapeHTML(value.to_str)',
      '                         ^^^^^^^',
      "    /usr/lib/ruby/3.1.0/cgi/util.rb:37:in `escapeHTML'",
      "    /workspace/lib/mustache.rb:210:in `escape'",
      "    /workspace/lib/mustache/context.rb:59:in `escape'",
      "    /workspace/test/partial_test.rb:49:in `test_view_partial_inherits_context'",
      '',
      '  2) Failure:',
      'AutoloadingTest#test_namespaced_autoload [/workspace/test/autoloading_test.rb:39]:',
      'Expected: "<h1>Dragon &lt; Tiger</h1>"',
      '  Actual: "<h1>Dragon+%3C+Tiger</h1>"',
      '',
      '112 runs, 126 assertions, 1 failures, 1 errors, 0 skips',
    ].join('\n');
    expect(keyLines(out)).toEqual([
      '1) Error:',
      'PartialTest#test_view_partial_inherits_context:',
      "NoMethodError: undefined method `to_str' for :One:Symbol",
      "/workspace/lib/mustache.rb:210:in `escape'",
      "/workspace/lib/mustache/context.rb:59:in `escape'",
      "/workspace/test/partial_test.rb:49:in `test_view_partial_inherits_context'",
      '2) Failure:',
      'AutoloadingTest#test_namespaced_autoload [/workspace/test/autoloading_test.rb:39]:',
      'Expected: "<h1>Dragon &lt; Tiger</h1>"',
      'Actual: "<h1>Dragon+%3C+Tiger</h1>"',
      '112 runs, 126 assertions, 1 failures, 1 errors, 0 skips',
    ]);
  });

  test('rspec: each example with its failing line, what it expected and what it got, its error and its spec line; the verdict', () => {
    // rspec 3.12 on Ruby 3.1, as it printed in the ruby image.
    const out = [
      'FFF',
      '',
      'Failures:',
      '',
      '  1) Calc adds',
      '     Failure/Error: expect(2 + 2).to eq(5)',
      '',
      '       expected: 5',
      '            got: 4',
      '',
      '       (compared using ==)',
      "     # ./spec/calc_spec.rb:3:in `block (2 levels) in <top (required)>'",
      '',
      '  2) Calc calls',
      '     Failure/Error: nil.upcase',
      '',
      '     NoMethodError:',
      "       undefined method `upcase' for nil:NilClass",
      '',
      '           nil.upcase',
      '              ^^^^^^^',
      "     # ./spec/calc_spec.rb:6:in `block (2 levels) in <top (required)>'",
      '',
      '  3) Calc includes',
      '     Failure/Error: expect([1, 2]).to include(3)',
      '       expected [1, 2] to include 3',
      "     # ./spec/calc_spec.rb:9:in `block (2 levels) in <top (required)>'",
      '',
      'Finished in 0.01571 seconds (files took 0.09 seconds to load)',
      '3 examples, 3 failures',
      '',
      'Failed examples:',
      '',
      'rspec ./spec/calc_spec.rb:2 # Calc adds',
      'rspec ./spec/calc_spec.rb:5 # Calc calls',
      'rspec ./spec/calc_spec.rb:8 # Calc includes',
    ].join('\n');
    expect(keyLines(out)).toEqual([
      '1) Calc adds',
      'Failure/Error: expect(2 + 2).to eq(5)',
      'expected: 5',
      'got: 4',
      "# ./spec/calc_spec.rb:3:in `block (2 levels) in <top (required)>'",
      '2) Calc calls',
      'Failure/Error: nil.upcase',
      'NoMethodError:',
      "undefined method `upcase' for nil:NilClass",
      "# ./spec/calc_spec.rb:6:in `block (2 levels) in <top (required)>'",
      '3) Calc includes',
      'Failure/Error: expect([1, 2]).to include(3)',
      'expected [1, 2] to include 3',
      "# ./spec/calc_spec.rb:9:in `block (2 levels) in <top (required)>'",
      '3 examples, 3 failures',
    ]);
  });

  test('rspec: a spec file that did not load: where, the failing line, the error with its message below it, the verdict', () => {
    const out = [
      '',
      'An error occurred while loading ./spec/load_spec.rb. - Did you mean?',
      '                    rspec ./spec/calc_spec.rb',
      '',
      'Failure/Error: require "nonexistent_gem_xyz"',
      '',
      'LoadError:',
      '  cannot load such file -- nonexistent_gem_xyz',
      "# ./spec/load_spec.rb:1:in `<top (required)>'",
      'No examples found.',
      '',
      '',
      'Finished in 0.00004 seconds (files took 0.2334 seconds to load)',
      '0 examples, 0 failures, 1 error occurred outside of examples',
    ].join('\n');
    expect(keyLines(out)).toEqual([
      'An error occurred while loading ./spec/load_spec.rb. - Did you mean?',
      'Failure/Error: require "nonexistent_gem_xyz"',
      'LoadError:',
      'cannot load such file -- nonexistent_gem_xyz',
      "# ./spec/load_spec.rb:1:in `<top (required)>'",
      '0 examples, 0 failures, 1 error occurred outside of examples',
    ]);
  });

  test('expected and actual under every label a runner prints: the actual line is never dropped', () => {
    // rspec's eql with its diff, testify's padded labels, PHPUnit's diff header: the second
    // line of each pair is what the code produced, and the one a fix needs.
    const rspecEql = [
      '  1) Dotenv::Parser parses unquoted values with spaces after seperator',
      '     Failure/Error: expect(env("FOO= bar")).to eql("FOO" => "baz")',
      '',
      '       expected: {"FOO"=>"baz"}',
      '            got: {"FOO"=>"bar"}',
      '',
      '       (compared using eql?)',
      '',
      '       Diff:',
      '       @@ -1 +1 @@',
      '       -"FOO" => "baz",',
      '       +"FOO" => "bar",',
      "     # ./spec/dotenv/parser_spec.rb:13:in `block (2 levels) in <top (required)>'",
      '',
      '129 examples, 1 failure',
    ].join('\n');
    expect(keyLines(rspecEql)).toEqual(
      expect.arrayContaining(['expected: {"FOO"=>"baz"}', 'got: {"FOO"=>"bar"}', '129 examples, 1 failure']),
    );
    const testify = [
      '--- FAIL: TestAdd (0.00s)',
      '    add_test.go:12:',
      '        \tError Trace:\tadd_test.go:12',
      '        \tError:      \tNot equal: ',
      '        \t            \texpected: 5',
      '        \t            \tactual  : 4',
      'FAIL',
      'FAIL\texample.com/add\t0.003s',
    ].join('\n');
    expect(keyLines(testify)).toEqual(expect.arrayContaining(['expected: 5', 'actual  : 4']));
    const phpunit = [
      "1) Brick\\Math\\Tests\\BigIntegerTest::testOf with data set #3 (123456789, '123456780')",
      'Failed asserting that two strings are identical.',
      '--- Expected',
      '+++ Actual',
      '@@ @@',
      "-'123456780'",
      "+'123456789'",
      '',
      '/workspace/tests/AbstractTestCase.php:26',
      '/workspace/tests/BigIntegerTest.php:32',
      '',
      'FAILURES!',
      'Tests: 207, Assertions: 207, Failures: 1.',
    ].join('\n');
    expect(keyLines(phpunit)).toEqual([
      "1) Brick\\Math\\Tests\\BigIntegerTest::testOf with data set #3 (123456789, '123456780')",
      'Failed asserting that two strings are identical.',
      '--- Expected',
      '+++ Actual',
      "-'123456780'",
      "+'123456789'",
      '/workspace/tests/AbstractTestCase.php:26',
      '/workspace/tests/BigIntegerTest.php:32',
      'Tests: 207, Assertions: 207, Failures: 1.',
    ]);
  });

  test('unittest with many errors: every headline before any second frame, the exception kept with its test, a new cause before a repeated one', () => {
    const report = (name: string, frame: string, error: string) => [
      '======================================================================',
      `ERROR: ${name} (tests.test_more.ChunkedTests.${name})`,
      '----------------------------------------------------------------------',
      'Traceback (most recent call last):',
      `  File "/workspace/tests/test_more.py", line ${100 + name.length}, in ${name}`,
      `    list(mi.chunked('ABCDEF', 3))`,
      `  File "/workspace/more_itertools/${frame}", line 126, in take`,
      '    return list(islice(iterable, count))',
      error,
      '',
    ];
    const stop = 'ValueError: Stop argument for islice() must be None or an integer: 0 <= x <= sys.maxsize.';
    const names = Array.from({ length: 14 }, (_, i) => `test_case_number_${i}`);
    const out = [
      ...names.slice(0, 7).flatMap((n) => report(n, 'recipes.py', stop)),
      ...report('test_last_value', 'more.py', 'TypeError: cannot unpack non-iterable NoneType object'),
      ...names.slice(7).flatMap((n) => report(n, 'recipes.py', stop)),
      '----------------------------------------------------------------------',
      'Ran 901 tests in 21.744s',
      '',
      'FAILED (errors=15)',
    ].join('\n');
    const key = keyLines(out);
    // Every test named (15 headlines), the verdict, both causes with the frame each ended in.
    expect(key.filter((k) => k.startsWith('ERROR: '))).toHaveLength(15);
    expect(key).toEqual(
      expect.arrayContaining([
        'FAILED (errors=15)',
        stop,
        'File "/workspace/more_itertools/recipes.py", line 126, in take',
        'TypeError: cannot unpack non-iterable NoneType object',
        'File "/workspace/more_itertools/more.py", line 126, in take',
      ]),
    );
  });

  test('unittest: subtests of one test are separate failures; a test named like another in another class is not merged with it', () => {
    const fail = (head: string, got: string) => [
      '======================================================================',
      head,
      '----------------------------------------------------------------------',
      'Traceback (most recent call last):',
      '  File "/workspace/tests/test_more.py", line 175, in test_basic',
      '    self.assertEqual(mi.last(iterable), expected)',
      `AssertionError: ${got}`,
      '',
    ];
    const out = [
      ...fail('FAIL: test_basic (tests.test_more.LastTests.test_basic) (iterable=range(0, 4))', 'None != 3'),
      ...fail('FAIL: test_basic (tests.test_more.LastTests.test_basic) (iterable=range(0, 1))', 'None != 0'),
      ...fail('FAIL: test_basic (tests.test_more.NthOrLastTests.test_basic)', 'None != 1'),
      'FAILED (failures=3)',
    ].join('\n');
    expect(keyLines(out)).toEqual([
      'FAIL: test_basic (tests.test_more.LastTests.test_basic) (iterable=range(0, 4))',
      'File "/workspace/tests/test_more.py", line 175, in test_basic',
      'AssertionError: None != 3',
      'FAIL: test_basic (tests.test_more.LastTests.test_basic) (iterable=range(0, 1))',
      'AssertionError: None != 0',
      'FAIL: test_basic (tests.test_more.NthOrLastTests.test_basic)',
      'AssertionError: None != 1',
      'FAILED (failures=3)',
    ]);
  });

  test('doctest under unittest: the example, what was expected and "Got nothing"', () => {
    const out = [
      'FAIL: last (more_itertools.more)',
      'Doctest: more_itertools.more.last',
      '----------------------------------------------------------------------',
      'Traceback (most recent call last):',
      '  File "/usr/lib/python3.11/doctest.py", line 2222, in runTest',
      '    raise self.failureException(self.format_failure(new.getvalue()))',
      'AssertionError: Failed doctest test for more_itertools.more.last',
      '  File "/workspace/more_itertools/more.py", line 279, in last',
      '',
      '----------------------------------------------------------------------',
      'File "/workspace/more_itertools/more.py", line 283, in more_itertools.more.last',
      'Failed example:',
      '    last([0, 1, 2, 3])',
      'Expected:',
      '    3',
      'Got nothing',
      '',
      'FAILED (failures=1)',
    ].join('\n');
    expect(keyLines(out)).toEqual(
      expect.arrayContaining([
        'FAIL: last (more_itertools.more)',
        'File "/workspace/more_itertools/more.py", line 283, in more_itertools.more.last',
        'last([0, 1, 2, 3])',
        'Expected:',
        '3',
        'Got nothing',
        'FAILED (failures=1)',
      ]),
    );
  });

  test('rustc: the label under the caret says what was expected and found', () => {
    const out = [
      'error[E0308]: mismatched types',
      '   --> src/lib.rs:144:40',
      '    |',
      '144 |             const MAX_STR_LEN: usize = $Unsigned::MAX.ilog10() + 1;',
      '    |                                        ^^^^^^^^^^^^^^^^^^^^^^^^^^^ expected `usize`, found `u32`',
      '',
      'error: could not compile `itoa` (lib) due to 1 previous error',
    ].join('\n');
    expect(keyLines(out)).toEqual([
      'error[E0308]: mismatched types',
      '--> src/lib.rs:144:40',
      '|                                        ^^^^^^^^^^^^^^^^^^^^^^^^^^^ expected `usize`, found `u32`',
      'error: could not compile `itoa` (lib) due to 1 previous error',
    ]);
  });

  test('ctest: the failing test list, the verdict and the Unity line that says what failed', () => {
    const out = [
      '14/19 Test #14: misc_tests .......................***Failed    0.01 sec',
      '/w/tests/misc_tests.c:459:cjson_get_object_item_should_get_object_items:PASS',
      '/w/tests/misc_tests.c:460:cjson_functions_should_not_crash_with_null_pointers:FAIL: Expected FALSE Was TRUE',
      '',
      '95% tests passed, 1 tests failed out of 19',
      '',
      'The following tests FAILED:',
      '\t 14 - misc_tests (Failed)',
    ].join('\n');
    expect(keyLines(out)).toEqual(
      expect.arrayContaining([
        '/w/tests/misc_tests.c:460:cjson_functions_should_not_crash_with_null_pointers:FAIL: Expected FALSE Was TRUE',
        '95% tests passed, 1 tests failed out of 19',
        'The following tests FAILED:',
        '14 - misc_tests (Failed)',
      ]),
    );
  });

  test('googletest under ctest: the failure’s file and line, what it compared, the test, the verdicts', () => {
    const out = [
      '[ RUN      ] MoneyTest.AddsCents',
      '/w/test/money_test.cc:42: Failure',
      'Expected equality of these values:',
      '  add(cents(1), cents(300))',
      '    Which is: 300',
      '  301',
      '[  FAILED  ] MoneyTest.AddsCents (0 ms)',
      '[==========] 12 tests from 3 test suites ran. (1 ms total)',
      '[  PASSED  ] 11 tests.',
      '[  FAILED  ] 1 test, listed below:',
      '[  FAILED  ] MoneyTest.AddsCents',
      '',
      ' 1 FAILED TEST',
      '',
      '0% tests passed, 1 tests failed out of 1',
    ].join('\n');
    expect(keyLines(out)).toEqual(
      expect.arrayContaining([
        '/w/test/money_test.cc:42: Failure',
        'Expected equality of these values:',
        'Which is: 300',
        '[  FAILED  ] MoneyTest.AddsCents (0 ms)',
        '0% tests passed, 1 tests failed out of 1',
      ]),
    );
  });

  test('a passing run keeps its verdict, one line, for every runner; never a passing test named like an error', () => {
    const verdicts = [
      '100% tests passed, 0 tests failed out of 19',
      'ok  \tgithub.com/google/uuid\t1.364s',
      'OK (3746 tests, 8086 assertions)',
      '112 runs, 153 assertions, 0 failures, 0 errors, 0 skips',
      '  47 passing (11ms)',
      'test result: ok. 11 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s',
      '============================== 472 passed in 2.40s ==============================',
    ];
    for (const verdict of verdicts) {
      const out = `test_levels[ERROR] PASSED\ntest_fatal_error_is_logged ... ok\n${verdict}\n`;
      expect({ verdict, key: keyLines(out, { exitCode: 0 }) }).toEqual({ verdict, key: [verdict.trim()] });
    }
  });

  test('a line glued to the end of binary data (cat of a gzip member, then a log) is still found', () => {
    for (const glued of ['\u0000\u0000', '\u001f\ufffd\u0003', '\ufffd\ufffdx\u0007']) {
      const out = `app started\n${'\ufffd\u0001\u0002'.repeat(40)}\n${'\u0003\ufffd'.repeat(30)}${glued}ERROR db: connection refused (pool exhausted)\nshutting down\n`;
      expect(keyLines(out, { exitCode: 0 })).toEqual(['ERROR db: connection refused (pool exhausted)']);
    }
    // Compressed bytes that happen to end in a few printable ones are no line.
    expect(keyLines(`${'\ufffd\u0001'.repeat(40)}ab: error\n`, { exitCode: 1 })).not.toContain('ab: error');
  });
});
