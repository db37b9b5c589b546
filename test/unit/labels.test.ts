import { hostname } from 'node:os';
import { containerLabels, currentOwner, LABEL, MANAGED_FILTER, parseOwner } from '../../src/sandbox/labels.js';
import { PACKAGE_VERSION } from '../../src/version.js';

describe('containerLabels', () => {
  test('carries every label key with a value', () => {
    const created = new Date('2026-01-02T03:04:05.000Z');
    const expires = new Date('2026-01-02T05:04:05.000Z');
    const labels = containerLabels('20260102-030405-abcdef', { host: 'box', pid: 4242 }, created, expires);
    expect(labels).toEqual({
      [LABEL.managed]: 'true',
      [LABEL.session]: '20260102-030405-abcdef',
      [LABEL.owner]: 'box:4242',
      [LABEL.createdAt]: '2026-01-02T03:04:05.000Z',
      [LABEL.expiresAt]: '2026-01-02T05:04:05.000Z',
      [LABEL.version]: PACKAGE_VERSION,
    });
    for (const key of Object.values(LABEL)) expect(labels[key]).toMatch(/\S/);
    expect(Object.keys(labels).sort()).toEqual(Object.values(LABEL).sort());
  });

  test('the managed filter selects the managed label', () => {
    expect(MANAGED_FILTER).toEqual({ [LABEL.managed]: 'true' });
  });

  test('currentOwner is this host and process', () => {
    expect(currentOwner()).toEqual({ host: hostname(), pid: process.pid });
  });
});

describe('parseOwner', () => {
  test('round-trips what containerLabels writes', () => {
    for (const owner of [{ host: 'box', pid: 1 }, { host: 'build-agent-7.example.com', pid: 987654 }, { host: 'fe80::1', pid: 31 }]) {
      const label = containerLabels('s', owner, new Date(), new Date())[LABEL.owner];
      expect(parseOwner(label)).toEqual(owner);
    }
  });

  test.each([undefined, '', 'garbage', ':123', 'host:', 'host:0', 'host:-5', 'host:1.5', 'host:abc', 'host:12x'])('rejects %p', (label) => {
    expect(parseOwner(label)).toBeUndefined();
  });

  test.each(['host:0x1f', 'host:1e3', 'host: 12', 'host:+12'])('rejects a pid that is not plain decimal digits: %p', (label) => {
    expect(parseOwner(label)).toBeUndefined();
  });
});
