'use strict';

const test = require('node:test');
const assert = require('node:assert');
const { addItem, removeItem, totalQty, applyCoupon, groupBySku } = require('../src/cart');

test('addItem appends a new line', () => {
  assert.deepStrictEqual(addItem([], 'A1'), [{ sku: 'A1', qty: 1 }]);
});

test('addItem merges an existing sku', () => {
  const cart = addItem([{ sku: 'A1', qty: 1 }], 'A1', 2);
  assert.strictEqual(cart[0].qty, 3);
});

test('removeItem drops the sku', () => {
  assert.deepStrictEqual(removeItem([{ sku: 'A1', qty: 1 }], 'A1'), []);
});

test('totalQty sums quantities', () => {
  assert.strictEqual(totalQty([{ sku: 'A', qty: 2 }, { sku: 'B', qty: 5 }]), 7);
});

test('totalQty of empty cart is zero', () => {
  assert.strictEqual(totalQty([]), 0);
});

test('groupBySku counts quantities per sku', () => {
  const lines = [
    { sku: 'A', qty: 2 },
    { sku: 'B', qty: 1 },
    { sku: 'A', qty: 3 },
  ];
  assert.deepStrictEqual(groupBySku(lines), { A: 5, B: 1 });
});
