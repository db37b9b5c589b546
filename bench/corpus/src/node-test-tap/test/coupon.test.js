'use strict';

const test = require('node:test');
const assert = require('node:assert');
const { applyCoupon } = require('../src/cart');

test('no coupon keeps the subtotal', () => {
  assert.strictEqual(applyCoupon(1000, null), 1000);
});

test('percent coupon', () => {
  assert.strictEqual(applyCoupon(1000, { type: 'percent', value: 15 }), 850);
});

test('fixed coupon never goes below zero', () => {
  assert.strictEqual(applyCoupon(300, { type: 'fixed', value: 500 }), 0);
});

test('unknown coupon type throws', () => {
  assert.throws(() => applyCoupon(100, { type: 'bogo' }), /unknown coupon type/);
});
