import { existsSync, mkdirSync, readdirSync, utimesSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { LogStore, pruneLogs } from '../../src/output/log-store.js';
import { removeTempDirs, tempDir } from './helpers.js';

afterAll(removeTempDirs);

const DAY = 24 * 3600 * 1000;
const NOW = Date.now();

/** A session folder with `bytes` of logs, last modified `ageMs` ago. */
function session(root: string, name: string, bytes: number, ageMs: number): string {
  const dir = join(root, name);
  mkdirSync(join(dir, 'nested'), { recursive: true });
  writeFileSync(join(dir, '0001-a.log'), Buffer.alloc(Math.ceil(bytes / 2), 'a'));
  writeFileSync(join(dir, 'nested', 'b.log'), Buffer.alloc(Math.floor(bytes / 2), 'b'));
  const t = new Date(NOW - ageMs);
  utimesSync(dir, t, t);
  return dir;
}

describe('LogStore.nextPath', () => {
  test('unique, ordered paths in the session folder, created on first use', () => {
    const root = tempDir('gcd-logs-');
    const store = new LogStore(root, '20260101-000000-aaaaaa');
    expect(existsSync(store.sessionDir)).toBe(false);
    const paths = Array.from({ length: 30 }, (_, i) => store.nextPath(i % 2 ? 'make' : 'npm test'));
    expect(existsSync(store.sessionDir)).toBe(true);
    expect(new Set(paths).size).toBe(30);
    expect(paths.every((p) => dirname(p) === store.sessionDir)).toBe(true);
    expect([...paths].sort()).toEqual(paths);
    expect(basename(paths[0]!)).toBe('0001-npm-test.log');
    expect(basename(paths[1]!)).toBe('0002-make.log');
  });

  test('labels are made safe for a file name', () => {
    const store = new LogStore(tempDir('gcd-logs-'), 's');
    expect(basename(store.nextPath('rm -rf / && echo "hi"'))).toBe('0001-rm--rf-echo-hi.log');
    expect(basename(store.nextPath('../../etc/passwd'))).toBe('0002-..-..-etc-passwd.log');
    expect(basename(store.nextPath('***'))).toBe('0003-cmd.log');
    expect(basename(store.nextPath('x'.repeat(100)))).toBe(`0004-${'x'.repeat(40)}.log`);
  });

  test('writeMeta writes the .json beside the log', async () => {
    const store = new LogStore(tempDir('gcd-logs-'), 's');
    const p = store.nextPath('ls');
    await store.writeMeta(p, { exitCode: 0 });
    expect(readdirSync(store.sessionDir)).toEqual(['0001-ls.json']);
  });

  test('the first path prunes older sessions, never its own', () => {
    const root = tempDir('gcd-logs-');
    session(root, 'old', 10, 30 * DAY);
    session(root, 'me', 10, 30 * DAY);
    const store = new LogStore(root, 'me', { maxAgeDays: 14, maxTotalBytes: 1024 ** 3 });
    store.nextPath('ls');
    expect(readdirSync(root).sort()).toEqual(['me']);
  });
});

describe('pruneLogs', () => {
  test('deletes sessions older than maxAgeDays', () => {
    const root = tempDir('gcd-prune-');
    const old = session(root, 's-old', 10, 15 * DAY);
    session(root, 's-recent', 10, 13 * DAY);
    session(root, 's-new', 10, 0);
    const removed = pruneLogs(root, 'current', { maxAgeDays: 14, maxTotalBytes: 1024 ** 3 }, NOW);
    expect(removed).toEqual([old]);
    expect(readdirSync(root).sort()).toEqual(['s-new', 's-recent']);
  });

  test('deletes oldest first until the total fits maxTotalBytes', () => {
    const root = tempDir('gcd-prune-');
    const a = session(root, 'a', 100, 4 * 3600_000);
    const b = session(root, 'b', 100, 3 * 3600_000);
    session(root, 'c', 100, 2 * 3600_000);
    session(root, 'd', 100, 1 * 3600_000);
    const removed = pruneLogs(root, 'current', { maxAgeDays: 14, maxTotalBytes: 250 }, NOW);
    expect(removed).toEqual([a, b]);
    expect(readdirSync(root).sort()).toEqual(['c', 'd']);
  });

  test('never deletes a session written to within the last hour (it may be live), even over the budget', () => {
    const root = tempDir('gcd-prune-');
    const old = session(root, 'old', 100, 3 * 3600_000);
    session(root, 'live', 1000, 10 * 60_000);
    const removed = pruneLogs(root, 'current', { maxAgeDays: 14, maxTotalBytes: 50 }, NOW);
    expect(removed).toEqual([old]);
    expect(readdirSync(root)).toEqual(['live']);
  });

  test('never deletes the current session, however old or large', () => {
    const root = tempDir('gcd-prune-');
    session(root, 'current', 10_000, 100 * DAY);
    const other = session(root, 'other', 100, 200 * DAY);
    const removed = pruneLogs(root, 'current', { maxAgeDays: 1, maxTotalBytes: 1024 ** 2 }, NOW);
    expect(removed).toEqual([other]);
    expect(readdirSync(root)).toEqual(['current']);
    expect(pruneLogs(root, 'current', { maxAgeDays: 0, maxTotalBytes: 1024 ** 2 }, NOW)).toEqual([]);
  });

  test('files at the top level are left alone; a missing root is no error', () => {
    const root = tempDir('gcd-prune-');
    writeFileSync(join(root, 'README'), 'x');
    session(root, 'old', 10, 100 * DAY);
    pruneLogs(root, 'current', { maxAgeDays: 1, maxTotalBytes: 1024 }, NOW);
    expect(readdirSync(root)).toEqual(['README']);
    expect(pruneLogs(join(root, 'missing'), 'x', { maxAgeDays: 1, maxTotalBytes: 1 }, NOW)).toEqual([]);
  });
});
