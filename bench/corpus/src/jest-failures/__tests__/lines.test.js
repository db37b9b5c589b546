const { lineCount, longestLine, readingTimeMinutes, stripComments } = require('../src/lines');

describe('lineCount', () => {
  test('counts lines', () => {
    expect(lineCount('a\nb\nc')).toBe(3);
  });

  test('empty text has no lines', () => {
    expect(lineCount('')).toBe(0);
  });

  test('ignores a trailing newline', () => {
    expect(lineCount('a\nb\n')).toBe(2);
  });
});

describe('longestLine', () => {
  test('finds the longest line', () => {
    expect(longestLine('ab\nabcd\nabc')).toBe('abcd');
  });
});

describe('readingTimeMinutes', () => {
  test('rounds up', () => {
    expect(readingTimeMinutes(201)).toBe(2);
  });
});

describe('stripComments', () => {
  test('drops comment lines', () => {
    expect(stripComments('# c\nx = 1\n  # d\ny = 2')).toBe('x = 1\ny = 2');
  });
});
