'use strict';

function money(cents, currency) {
  const sign = cents < 0 ? '-' : '';
  const abs = Math.abs(cents);
  return `${sign}${currency.symbol}${Math.floor(abs / 100)}.${String(abs % 100).padStart(2, '0')}`;
}

function formatLine(item, currency) {
  const label = item.name.padEnd(20);
  return `${label} x${item.qty}  ${money(item.qty * item.unitCents, currency)}`;
}

function formatAddress(addr) {
  return [addr.street, addr.city, addr.zip].filter(Boolean).join(', ');
}

module.exports = { money, formatLine, formatAddress };
