import { chmodSync, mkdirSync, readdirSync, statSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import {
  checkedLogPath,
  checkLookupId,
  jobsDir,
  listRecords,
  pruneRecords,
  readRecord,
  supervisorAlive,
  writeRecord,
  type JobRecord,
} from '../../../src/cli/jobs.js';
import { processStart } from '../../../src/sandbox/labels.js';
import { removeTempDirs, tempDir } from '../../support/temp-dirs.js';

afterAll(() => removeTempDirs());

const record = (over: Partial<JobRecord> = {}): JobRecord => ({
  id: 'j0a1b2c',
  host: hostname(),
  pid: process.pid,
  command: 'sleep 1',
  started: '2026-11-26T01:00:00.000Z',
  state: 'running',
  ...over,
});

describe('the jobs folder and its records', () => {
  test('made 0700 under the log folder; records written 0600, whole, and read back', () => {
    const logs = tempDir('gcd-jobs-');
    const dir = jobsDir(logs);
    expect(dir).toBe(join(logs, 'jobs'));
    expect(statSync(dir).mode & 0o777).toBe(0o700);
    writeRecord(dir, record());
    expect(statSync(join(dir, 'j0a1b2c.json')).mode & 0o777).toBe(0o600);
    expect(readdirSync(dir)).toEqual(['j0a1b2c.json']); // no temporary file left
    expect(readRecord(dir, 'j0a1b2c')).toEqual(record());
    expect(listRecords(dir).map((r) => r.id)).toEqual(['j0a1b2c']);
  });

  test('a jobs folder that is a link, or open to others, is refused with a sentence', () => {
    const linked = tempDir('gcd-jobs-');
    symlinkSync(tempDir('gcd-elsewhere-'), join(linked, 'jobs'));
    expect(() => jobsDir(linked)).toThrow(/jobs is not a folder \(a link or a file is there\)/);
    const open = tempDir('gcd-jobs-');
    mkdirSync(join(open, 'jobs'));
    chmodSync(join(open, 'jobs'), 0o777);
    expect(() => jobsDir(open)).toThrow(/can be read or changed by others \(mode 777\)/);
  });

  test('a bad record is as good as absent: not JSON, the wrong shape, another id, a link, too big', () => {
    const dir = jobsDir(tempDir('gcd-jobs-'));
    const file = join(dir, 'j0a1b2c.json');
    for (const text of ['{', '[]', JSON.stringify({ ...record(), pid: -1 }), JSON.stringify(record({ id: 'j999999' }))]) {
      writeFileSync(file, text);
      expect(readRecord(dir, 'j0a1b2c')).toBeUndefined();
    }
    writeFileSync(file, JSON.stringify({ ...record(), command: 'x'.repeat(70_000) }));
    expect(readRecord(dir, 'j0a1b2c')).toBeUndefined();
    const target = join(tempDir('gcd-elsewhere-'), 'r.json');
    writeFileSync(target, JSON.stringify(record()));
    symlinkSync(target, join(dir, 'j111111.json'));
    expect(readRecord(dir, 'j111111')).toBeUndefined();
    // Never a path: only the id's own shape is looked up.
    expect(readRecord(dir, '../jobs/j0a1b2c')).toBeUndefined();
    for (const id of ['../x', '/etc/passwd', '', 'a/b', '.hidden']) expect(() => checkLookupId(id)).toThrow(/is not a background job/);
  });

  test("a record's log path is followed only to a regular file of this user's inside the log folder", () => {
    const logs = tempDir('gcd-jobs-');
    mkdirSync(join(logs, 'session'));
    const log = join(logs, 'session', '0001-bg-p1-sleep.log');
    writeFileSync(log, 'out\n');
    expect(checkedLogPath(logs, record({ logPath: log }))).toBe(log);
    const outside = join(tempDir('gcd-elsewhere-'), 'x.log');
    writeFileSync(outside, 'secret\n');
    symlinkSync(outside, join(logs, 'session', 'link.log'));
    for (const logPath of [
      outside,
      join(logs, 'session', 'link.log'),
      `${logs}/session/../session/0001-bg-p1-sleep.log`,
      'session/0001-bg-p1-sleep.log',
      join(logs, 'session'),
      join(logs, 'missing.log'),
    ])
      expect(checkedLogPath(logs, record({ logPath }))).toBeUndefined();
  });

  test("a supervisor is alive only as the same process: another host's, a dead pid, a reused pid are not", () => {
    const start = processStart(process.pid);
    expect(supervisorAlive(record({ ...(start ? { pidStart: start } : {}) }))).toBe(true);
    expect(supervisorAlive(record({ host: 'elsewhere' }))).toBe(false);
    expect(supervisorAlive(record({ pid: 2 ** 22 + 1 }))).toBe(false);
    expect(supervisorAlive(record({ pidStart: 'another-boot:1' }))).toBe(false);
  });

  test('records of jobs that ended long ago are pruned with their output; running and recent ones stay', () => {
    const dir = jobsDir(tempDir('gcd-jobs-'));
    const now = Date.parse('2026-11-26T00:00:00Z');
    writeRecord(dir, record({ id: 'j000001', state: 'ended', reason: 'exited', exitCode: 0, ended: '2026-11-01T00:00:00Z' }));
    writeFileSync(join(dir, 'j000001.out'), '');
    writeRecord(dir, record({ id: 'j000002', state: 'ended', reason: 'killed', ended: '2026-11-25T23:00:00Z' }));
    writeRecord(dir, record({ id: 'j000003' }));
    utimesSync(dir, new Date(now), new Date(now));
    pruneRecords(dir, 14 * 24 * 3600_000, now);
    expect(readdirSync(dir).sort()).toEqual(['j000002.json', 'j000003.json']);
  });
});
