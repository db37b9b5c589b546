'use strict';

const { formatLine, formatAddress, money } = require('./format');

const CURRENCIES = {
  EUR: { symbol: '€' },
  USD: { symbol: '$' },
};

function orderTotal(order) {
  return order.items.reduce((sum, item) => sum + item.qty * item.unitCents, 0);
}

function renderOrder(order) {
  const currency = CURRENCIES[order.currency];
  const lines = [`Order #${order.id} for ${order.customer.name}`];
  lines.push(`  ship to: ${formatAddress(order.customer.address)}`);
  for (const item of order.items) {
    lines.push('  ' + formatLine(item, currency));
  }
  lines.push(`  total: ${money(orderTotal(order), currency)}`);
  return lines.join('\n');
}

function renderAll(orders) {
  return orders.map((order) => renderOrder(order));
}

module.exports = { renderAll, renderOrder, orderTotal };
