const { render, total } = require('../render');
test('renders user card', () => {
  expect(render({ name: 'Ann', email: 'a@x.io' })).toMatchSnapshot();
});
test('total throws on bad items', () => {
  expect(total(null)).toBe(0);
});
test('total of cart', () => { expect(total([{ price: 2, qty: 3 }])).toBe(6); });
