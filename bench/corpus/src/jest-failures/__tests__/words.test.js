const { tokenize, wordCounts, topWords, capitalize } = require('../src/words');

describe('tokenize', () => {
  test('splits on whitespace and punctuation', () => {
    expect(tokenize('Hello, world! Hello.')).toEqual(['hello', 'world', 'hello']);
  });

  test('keeps apostrophes inside words', () => {
    expect(tokenize("don't stop")).toEqual(["don't", 'stop']);
  });

  test('returns an empty list for blank text', () => {
    expect(tokenize('   ')).toEqual([]);
  });
});

describe('wordCounts', () => {
  test('counts repeated words', () => {
    expect(wordCounts('a b a c a')).toEqual({ a: 3, b: 1, c: 1 });
  });

  test('is case-insensitive', () => {
    expect(wordCounts('Go go GO')).toEqual({ go: 3 });
  });
});

describe('topWords', () => {
  test('returns the n most frequent words', () => {
    expect(topWords('x y y z z z', 2)).toEqual(['z', 'y']);
  });

  test('breaks ties alphabetically', () => {
    expect(topWords('pear apple fig apple pear fig', 3)).toEqual(['apple', 'fig', 'pear']);
  });

  test('n larger than vocabulary', () => {
    expect(topWords('one two', 5)).toHaveLength(2);
  });
});

describe('capitalize', () => {
  test('upper-cases the first letter', () => {
    expect(capitalize('word')).toBe('Word');
  });

  test('leaves an empty string alone', () => {
    expect(capitalize('')).toBe('');
  });
});
