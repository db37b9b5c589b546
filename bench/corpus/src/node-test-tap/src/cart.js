'use strict';

function addItem(cart, sku, qty = 1) {
  const existing = cart.find((l) => l.sku === sku);
  if (existing) {
    existing.qty += qty;
    return cart;
  }
  return [...cart, { sku, qty }];
}

function removeItem(cart, sku) {
  return cart.filter((l) => l.sku !== sku);
}

function totalQty(cart) {
  return cart.reduce((n, l) => n + l.qty, 0);
}

function applyCoupon(subtotal, coupon) {
  if (!coupon) return subtotal;
  if (coupon.type === 'percent') return Math.round(subtotal * (1 - coupon.value / 100));
  if (coupon.type === 'fixed') return subtotal - coupon.value;
  throw new Error(`unknown coupon type ${coupon.type}`);
}

function groupBySku(lines) {
  const out = {};
  for (const l of lines) {
    out[l.sku] = (out[l.sku] || 0) + 1;
  }
  return out;
}

module.exports = { addItem, removeItem, totalQty, applyCoupon, groupBySku };
