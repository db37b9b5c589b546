import {
  chmodSync,
  chownSync,
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { LogStore } from '../../../src/capture/log-store.js';
import { pruneLogs, SESSION_MARKER } from '../../../src/capture/session-folders.js';
import { removeTempDirs, syncSandboxError, tempDir } from '../helpers.js';

afterAll(removeTempDirs);

const DAY = 24 * 3600 * 1000;
const NOW = Date.now();

/** A session folder as LogStore makes it, with `bytes` of logs, last modified `ageMs` ago. */
function session(root: string, name: string, bytes: number, ageMs: number): string {
  const dir = join(root, name);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, SESSION_MARKER), '');
  writeFileSync(join(dir, '0001-a.log'), Buffer.alloc(Math.ceil(bytes / 2), 'a'));
  writeFileSync(join(dir, '0001-a.json'), Buffer.alloc(Math.floor(bytes / 2), 'b'));
  const t = new Date(NOW - ageMs);
  utimesSync(dir, t, t);
  return dir;
}

function age(path: string, ageMs: number): void {
  const t = new Date(NOW - ageMs);
  utimesSync(path, t, t);
}

/** Creates the next log of `store`, writes `text` into it and closes it; returns its path. */
function writeLog(store: LogStore, label: string, text = ''): string {
  const sink = store.create(label);
  sink.write(Buffer.from(text));
  sink.end();
  if (sink.error) throw new Error(sink.error);
  return sink.path;
}

describe('LogStore.create', () => {
  test('unique, ordered paths in the session folder, created on first use', () => {
    const root = tempDir('gcd-logs-');
    const store = new LogStore(root, '20260101-000000-aaaaaa');
    expect(existsSync(store.sessionDir)).toBe(false);
    const paths = Array.from({ length: 30 }, (_, i) => writeLog(store, i % 2 ? 'make' : 'npm test'));
    expect(existsSync(store.sessionDir)).toBe(true);
    expect(new Set(paths).size).toBe(30);
    expect(paths.every((p) => dirname(p) === store.sessionDir)).toBe(true);
    expect([...paths].sort()).toEqual(paths);
    expect(basename(paths[0]!)).toBe('0001-npm-test.log');
    expect(basename(paths[1]!)).toBe('0002-make.log');
  });

  test('labels are made safe for a file name', () => {
    const store = new LogStore(tempDir('gcd-logs-'), 's');
    expect(basename(writeLog(store, 'rm -rf / && echo "hi"'))).toBe('0001-rm--rf-echo-hi.log');
    expect(basename(writeLog(store, '../../etc/passwd'))).toBe('0002-..-..-etc-passwd.log');
    expect(basename(writeLog(store, '***'))).toBe('0003-cmd.log');
    expect(basename(writeLog(store, 'x'.repeat(100)))).toBe(`0004-${'x'.repeat(40)}.log`);
  });

  test('writeMeta writes the .json beside the log', async () => {
    const store = new LogStore(tempDir('gcd-logs-'), 's');
    const p = writeLog(store, 'ls');
    await store.writeMeta(p, { exitCode: 0 });
    expect(readdirSync(store.sessionDir).sort()).toEqual([SESSION_MARKER, '0001-ls.json', '0001-ls.log'].sort());
  });

  test('logs are for their owner only: folder 0700, files 0600', () => {
    const store = new LogStore(tempDir('gcd-logs-'), 's');
    const p = writeLog(store, 'ls', 'secret');
    expect(statSync(store.sessionDir).mode & 0o777).toBe(0o700);
    expect(statSync(p).mode & 0o777).toBe(0o600);
  });

  test('the first log prunes older sessions, never its own', () => {
    const root = tempDir('gcd-logs-');
    session(root, 'old', 10, 30 * DAY);
    const store = new LogStore(root, 'me', { maxAgeDays: 14, maxTotalBytes: 1024 ** 3 });
    writeLog(store, 'ls');
    expect(readdirSync(root).sort()).toEqual(['me']);
  });

  test.each(['..', '.', '../escape', 'a/b', '/abs', '', 'x'.repeat(65), 'sp ace', '-dash'])('session id %j is refused', (id) => {
    expect(syncSandboxError(() => new LogStore(tempDir('gcd-logs-'), id)).code).toBe('INVALID_ARGUMENT');
  });
});

describe('LogStore: what a writer in the log folder cannot make it do', () => {
  /** A file the attacker wants overwritten, e.g. ~/.bashrc. */
  function victim(): string {
    const p = join(tempDir('gcd-victim-'), '.bashrc');
    writeFileSync(p, 'original\n');
    return p;
  }

  test('a link planted under the next log name is never written through; the log goes to the next free name', () => {
    const store = new LogStore(tempDir('gcd-logs-'), 's');
    writeLog(store, 'first');
    const target = victim();
    symlinkSync(target, join(store.sessionDir, '0002-echo.log'));
    symlinkSync(target, join(store.sessionDir, '0003-echo.log'));
    const p = writeLog(store, 'echo', 'pwned\n');
    expect(readFileSync(target, 'utf8')).toBe('original\n');
    expect(basename(p)).toBe('0004-echo.log');
    expect(lstatSync(p).isFile()).toBe(true);
    expect(readFileSync(p, 'utf8')).toBe('pwned\n');
  });

  test('a link to a missing file (it would be created there) is not followed either', () => {
    const store = new LogStore(tempDir('gcd-logs-'), 's');
    writeLog(store, 'first');
    const target = join(tempDir('gcd-victim-'), 'created-by-attacker');
    symlinkSync(target, join(store.sessionDir, '0002-x.log'));
    writeLog(store, 'x', 'data');
    expect(existsSync(target)).toBe(false);
  });

  test('a file planted under the next name is neither truncated nor appended to', () => {
    const store = new LogStore(tempDir('gcd-logs-'), 's');
    writeLog(store, 'first');
    writeFileSync(join(store.sessionDir, '0002-x.log'), 'planted');
    const p = writeLog(store, 'x', 'mine');
    expect(readFileSync(join(store.sessionDir, '0002-x.log'), 'utf8')).toBe('planted');
    expect(readFileSync(p, 'utf8')).toBe('mine');
  });

  test('a link planted under the metadata name is refused, its target untouched', async () => {
    const store = new LogStore(tempDir('gcd-logs-'), 's');
    const target = victim();
    const p = writeLog(store, 'ls');
    symlinkSync(target, p.replace(/\.log$/, '.json'));
    await expect(store.writeMeta(p, { exitCode: 0 })).rejects.toThrow();
    expect(readFileSync(target, 'utf8')).toBe('original\n');
  });

  test('a session folder swapped for a link between commands gets no write; the error is on the sink', () => {
    const root = tempDir('gcd-logs-');
    const store = new LogStore(root, 's');
    writeLog(store, 'first');
    const elsewhere = tempDir('gcd-victim-');
    renameSync(store.sessionDir, join(root, 'moved'));
    symlinkSync(elsewhere, store.sessionDir);
    const sink = store.create('next');
    sink.write(Buffer.from('x'));
    sink.end();
    expect(sink.error).toMatch(/not a folder/);
    expect(readdirSync(elsewhere)).toEqual([]);
  });

  test('a session folder swapped for another real folder is not taken for ours', () => {
    const root = tempDir('gcd-logs-');
    const store = new LogStore(root, 's');
    writeLog(store, 'first');
    renameSync(store.sessionDir, join(root, 'moved'));
    mkdirSync(store.sessionDir);
    const sink = store.create('next');
    sink.end();
    expect(sink.error).toMatch(/not created by this session/);
    expect(readdirSync(store.sessionDir)).toEqual([]);
  });

  test('a folder already there under the session name (made by someone else) is not taken over', () => {
    const root = tempDir('gcd-logs-');
    mkdirSync(join(root, 's'));
    const sink = new LogStore(root, 's').create('x');
    sink.end();
    expect(sink.error).toMatch(/not created by this session/);
    expect(readdirSync(join(root, 's'))).toEqual([]);
  });

  const unsafe: Array<[string, number, 'root' | 'root-group' | 'parent']> = [
    ['a log root writable by others', 0o777, 'root'],
    ['a folder above it writable by others (and not sticky)', 0o777, 'parent'],
  ];
  // Giving the folder another group needs root (as CI runs).
  if (process.getuid?.() === 0) unsafe.push(['a log root writable by a group not its owner\u2019s own', 0o775, 'root-group']);
  test.each(unsafe)('%s: no log is written there; the sink says why', (_what, mode, where) => {
    const parent = tempDir('gcd-shared-');
    const root = join(parent, 'logs');
    mkdirSync(root);
    chmodSync(where === 'parent' ? parent : root, mode);
    if (where === 'root-group') chownSync(root, process.getuid?.() ?? 0, 4242);
    const sink = new LogStore(root, 's').create('x');
    sink.end();
    expect(sink.error).toMatch(/can be changed by another user/);
    expect(readdirSync(root)).toEqual([]);
  });

  test('a sticky world-writable folder above (like /tmp) is fine', () => {
    const parent = tempDir('gcd-sticky-');
    chmodSync(parent, 0o1777);
    expect(readFileSync(writeLog(new LogStore(join(parent, 'logs'), 's'), 'x', 'ok'), 'utf8')).toBe('ok');
  });

  test('a session folder removed by hand is made again', () => {
    const store = new LogStore(tempDir('gcd-logs-'), 's');
    writeLog(store, 'a');
    rmSync(store.sessionDir, { recursive: true });
    expect(readFileSync(writeLog(store, 'b', 'again'), 'utf8')).toBe('again');
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

  test('a folder without our marker is never deleted, however old: a source tree, .git, a sibling repository', () => {
    const root = tempDir('gcd-prune-');
    for (const name of ['src', '.git', 'node_modules', 'other-repo', '20250101-000000-abcdef']) {
      mkdirSync(join(root, name));
      writeFileSync(join(root, name, '0001-a.log'), 'x');
      age(join(root, name), 100 * DAY);
    }
    expect(pruneLogs(root, 'current', { maxAgeDays: 1, maxTotalBytes: 1 }, NOW)).toEqual([]);
    expect(readdirSync(root).sort()).toEqual(['.git', '20250101-000000-abcdef', 'node_modules', 'other-repo', 'src']);
  });

  test('a marked folder holding anything but our log files is kept whole', () => {
    const root = tempDir('gcd-prune-');
    const foreign = session(root, 'with-source', 10, 100 * DAY);
    writeFileSync(join(foreign, 'main.c'), 'int main;');
    const nested = session(root, 'with-folder', 10, 100 * DAY);
    mkdirSync(join(nested, 'sub'));
    age(foreign, 100 * DAY);
    age(nested, 100 * DAY);
    expect(pruneLogs(root, 'current', { maxAgeDays: 1, maxTotalBytes: 1 }, NOW)).toEqual([]);
    expect(readdirSync(foreign).sort()).toEqual([SESSION_MARKER, '0001-a.json', '0001-a.log', 'main.c'].sort());
    expect(existsSync(join(nested, 'sub'))).toBe(true);
  });

  test('links are never followed: a linked session folder, or a log name that is a link', () => {
    const root = tempDir('gcd-prune-');
    const outside = session(tempDir('gcd-victim-'), 'target', 10, 100 * DAY);
    symlinkSync(outside, join(root, 'linked'));
    const withLink = session(root, 'with-link', 10, 100 * DAY);
    const precious = join(tempDir('gcd-victim-'), 'precious.txt');
    writeFileSync(precious, 'keep');
    symlinkSync(precious, join(withLink, '0002-b.log'));
    age(withLink, 100 * DAY);
    expect(pruneLogs(root, 'current', { maxAgeDays: 1, maxTotalBytes: 1 }, NOW)).toEqual([]);
    expect(readdirSync(outside).length).toBe(3);
    expect(readFileSync(precious, 'utf8')).toBe('keep');
    expect(readdirSync(withLink)).toContain('0002-b.log');
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
