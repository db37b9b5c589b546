exports.render = (u) => ({ tag: 'div', cls: 'user-card', children: [u.name, u.email, u.role ?? 'member'] });
exports.total = (items) => items.reduce((s, i) => s + i.price * i.qty, 0);
