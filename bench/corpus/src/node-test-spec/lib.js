exports.parsePort = (s) => { const n = Number(s); if (!Number.isInteger(n)) throw new TypeError('port must be an integer'); return n; };
exports.slug = (s) => s.toLowerCase().replace(/ /g, '-');
