'use strict';

const { renderAll } = require('./lib/orders');

const orders = [
  {
    id: 1001,
    currency: 'EUR',
    customer: { name: 'Ana', address: { street: 'Rua Nova 4', city: 'Porto', zip: '4000' } },
    items: [
      { name: 'notebook', qty: 3, unitCents: 250 },
      { name: 'pen', qty: 10, unitCents: 90 },
    ],
  },
  {
    id: 1002,
    currency: 'GBP',
    customer: { name: 'Ben', address: { street: '1 High St', city: 'Leeds' } },
    items: [{ name: 'stapler', qty: 1, unitCents: 1299 }],
  },
];

console.log(`exporting ${orders.length} orders`);
const out = renderAll(orders);
for (const block of out) {
  console.log(block);
}
console.log('done');
