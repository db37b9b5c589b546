function lineCount(text) {
  if (text === '') return 0;
  return text.split('\n').length;
}

function longestLine(text) {
  return text.split('\n').reduce((best, l) => (l.length > best.length ? l : best), '');
}

function readingTimeMinutes(words, wpm = 200) {
  return Math.ceil(words / wpm);
}

function stripComments(text) {
  return text
    .split('\n')
    .filter((l) => !l.trimStart().startsWith('#'))
    .join('\n');
}

module.exports = { lineCount, longestLine, readingTimeMinutes, stripComments };
