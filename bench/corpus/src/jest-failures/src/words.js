function tokenize(text) {
  return text
    .toLowerCase()
    .split(/[^a-z0-9']+/)
    .filter(Boolean);
}

function wordCounts(text) {
  const counts = {};
  for (const w of tokenize(text)) {
    counts[w] = (counts[w] || 0) + 1;
  }
  return counts;
}

function topWords(text, n) {
  return Object.entries(wordCounts(text))
    .sort((a, b) => b[1] - a[1])
    .slice(0, n)
    .map(([w]) => w);
}

function capitalize(word) {
  return word.charAt(0).toUpperCase() + word.slice(1);
}

module.exports = { tokenize, wordCounts, topWords, capitalize };
