import { spawnSync } from 'node:child_process';
import { hostname } from 'node:os';
import { containerLabels, currentOwner, LABEL, MANAGED_FILTER, parseOwner, processStart } from '../../../src/sandbox/labels.js';
import { PACKAGE_VERSION } from '../../../src/version.js';

describe('containerLabels', () => {
  test('carries every label key with a value', () => {
    const created = new Date('2026-01-02T03:04:05.000Z');
    const expires = new Date('2026-01-02T05:04:05.000Z');
    const labels = containerLabels('20260102-030405-abcdef', { host: 'box', pid: 4242, start: 'boot-id:777' }, created, expires);
    expect(labels).toEqual({
      [LABEL.managed]: 'true',
      [LABEL.session]: '20260102-030405-abcdef',
      [LABEL.owner]: 'box:4242',
      [LABEL.ownerStart]: 'boot-id:777',
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

  test('without a known start time there is no start label', () => {
    const labels = containerLabels('s', { host: 'box', pid: 4242 }, new Date(), new Date());
    expect(labels[LABEL.owner]).toBe('box:4242');
    expect(LABEL.ownerStart in labels).toBe(false);
  });

  test('currentOwner is this host and process, with its start time from /proc', () => {
    expect(currentOwner()).toEqual({ host: hostname(), pid: process.pid, start: processStart(process.pid) });
    expect(currentOwner().start).toMatch(/^[0-9a-f-]{36}:\d+$/);
  });
});

describe('processStart', () => {
  test('tells two processes apart, and nothing for a pid that does not exist', () => {
    const child = spawnSync(process.execPath, ['-e', 'console.log(require("fs").readFileSync("/proc/self/stat", "utf8"))'], {
      encoding: 'utf8',
    });
    expect(child.status).toBe(0);
    const own = processStart(process.pid)!;
    expect(own).toBeDefined();
    // The child's own view of its start, parsed the same way, differs from ours.
    const childTicks = child.stdout.slice(child.stdout.lastIndexOf(')') + 2).split(' ')[19];
    expect(childTicks).toMatch(/^\d+$/);
    expect(own.split(':')[1]).not.toBe(childTicks);
    expect(Number(own.split(':')[1])).toBeLessThanOrEqual(Number(childTicks));
    expect(processStart(2 ** 22 + 12345)).toBeUndefined();
  });
});

describe('parseOwner', () => {
  test('round-trips what containerLabels writes', () => {
    for (const owner of [
      { host: 'box', pid: 1 },
      { host: 'build-agent-7.example.com', pid: 987654 },
      { host: 'fe80::1', pid: 31 },
      { host: 'box', pid: 9, start: 'b:1' },
    ]) {
      const labels = containerLabels('s', owner, new Date(), new Date());
      expect(parseOwner(labels[LABEL.owner], labels[LABEL.ownerStart])).toEqual(owner);
    }
  });

  test.each([undefined, '', 'garbage', ':123', 'host:', 'host:0', 'host:-5', 'host:1.5', 'host:abc', 'host:12x'])('rejects %p', (label) => {
    expect(parseOwner(label)).toBeUndefined();
  });

  test.each(['host:0x1f', 'host:1e3', 'host: 12', 'host:+12'])('rejects a pid that is not plain decimal digits: %p', (label) => {
    expect(parseOwner(label)).toBeUndefined();
  });
});
