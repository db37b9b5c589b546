import { test } from 'node:test';
import assert from 'node:assert/strict';
import { greet } from './greet.mjs';

test('greet', () => {
  assert.equal(greet('Node.js'), 'Hello, Node.js!');
});
