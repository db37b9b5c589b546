import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { readLogLines } from '../../../src/actions/read-log.js';
import { removeTempDirs, tempDir } from '../../support/temp-dirs.js';
import { sandboxError } from '../../support/sandbox-error.js';

async function expectSandboxError(p: Promise<unknown>, code: string): Promise<void> {
  expect((await sandboxError(() => p)).code).toBe(code);
}

afterAll(() => removeTempDirs());

const caps = { maxLines: 1000, maxBytes: 32 * 1024 };

function logsWith(text: string): { logs: string; log: string; outside: string } {
  const logs = tempDir('gcd-read-log-');
  mkdirSync(join(logs, 'session'));
  const log = join(logs, 'session', '001-cmd.log');
  writeFileSync(log, text);
  const outside = join(tempDir('gcd-read-log-outside-'), 'secret.txt');
  writeFileSync(outside, 'secret\n');
  return { logs, log, outside };
}

test('a range of lines, numbered; the total when the end was read', async () => {
  const { logs, log } = logsWith('a\nb\nc\nd\n');
  expect(await readLogLines(logs, log, { startLine: 2, endLine: 3 }, caps)).toEqual({
    logPath: log,
    startLine: 2,
    endLine: 3,
    text: '2| b\n3| c',
  });
  expect(await readLogLines(logs, log, {}, caps)).toMatchObject({
    startLine: 1,
    endLine: 4,
    totalLines: 4,
    text: '1| a\n2| b\n3| c\n4| d',
  });
  expect(await readLogLines(logs, log, { startLine: 9 }, caps)).toMatchObject({ endLine: 8, totalLines: 4, text: '' });
  const { logs: l2, log: noNewline } = logsWith('x\ny');
  expect(await readLogLines(l2, noNewline, {}, caps)).toMatchObject({ totalLines: 2, text: '1| x\n2| y' });
});

test('at most maxLines lines and maxBytes bytes a read, saying where to go on', async () => {
  const { logs, log } = logsWith(Array.from({ length: 50 }, (_, i) => `line ${i + 1}`).join('\n') + '\n');
  const byLines = await readLogLines(logs, log, { startLine: 5 }, { maxLines: 10, maxBytes: 1024 });
  expect(byLines).toMatchObject({ startLine: 5, endLine: 14, note: expect.stringContaining('line 15') });
  expect(byLines.totalLines).toBeUndefined();
  const byBytes = await readLogLines(logs, log, {}, { maxLines: 1000, maxBytes: 20 });
  expect(byBytes.note).toMatch(/cut at 20 bytes/);
  expect(byBytes.text.startsWith('1| line 1\n2| line 2')).toBe(true);
});

test('only logs under the log folder: links, .. and other files are refused', async () => {
  const { logs, log, outside } = logsWith('ok\n');
  // A link in the log folder to a file outside it, to a folder outside it, and a link to a link.
  symlinkSync(outside, join(logs, 'session', 'link.log'));
  symlinkSync(join(outside, '..'), join(logs, 'session', 'dir-link'));
  symlinkSync(join(logs, 'session', 'link.log'), join(logs, 'session', 'link2.log'));
  for (const path of [
    outside,
    join(logs, 'session', 'link.log'),
    join(logs, 'session', 'link2.log'),
    join(logs, 'session', 'dir-link', 'secret.txt'),
    join(logs, 'session', '..', '..', outside),
    `${logs}/../${outside.split('/').slice(-2).join('/')}`,
    'session/001-cmd.log',
    logs,
  ])
    expect([path, (await sandboxError(() => readLogLines(logs, path, {}, caps))).code]).toEqual([path, 'INVALID_ARGUMENT']);
  await expectSandboxError(readLogLines(logs, join(logs, 'session'), {}, caps), 'FILE_OPERATION_FAILED');
  await expectSandboxError(readLogLines(logs, join(logs, 'session', 'missing.log'), {}, caps), 'FILE_OPERATION_FAILED');
  await expectSandboxError(readLogLines(logs, log, { startLine: 3, endLine: 2 }, caps), 'INVALID_ARGUMENT');
  expect((await readLogLines(logs, log, {}, caps)).text).toBe('1| ok');
});
