const { render } = require('../render');
describe('broken', () => {
  it('works', () => {
    expect(render({ name: 'x' }).tag).toBe('div')
  };
});
