/**
 * The helper that removes files the host deleted (scripts/container/remove-files.sh), run by
 * this machine's own `sh` exactly as the container runs it: `sh -c REMOVE_FILES_SCRIPT sh <path>...`.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { REMOVE_FILES_SCRIPT } from '../../../src/commands/wrapper-protocol.js';

let dir: string;
beforeEach(() => (dir = mkdtempSync(join(tmpdir(), 'gcd-remove-'))));
afterEach(() => rmSync(dir, { recursive: true, force: true }));

test('files named are removed, a folder named is left with what is in it, a missing name is no error', () => {
  for (const f of ['a.txt', 'with space', '-dash', 'keep.txt']) writeFileSync(join(dir, f), 'x');
  mkdirSync(join(dir, 'sub'));
  writeFileSync(join(dir, 'sub', 'inner'), 'x');
  const named = ['a.txt', 'with space', '-dash', 'sub', 'missing'].map((f) => join(dir, f));
  execFileSync('sh', ['-c', REMOVE_FILES_SCRIPT, 'sh', ...named]);
  expect(['a.txt', 'with space', '-dash'].filter((f) => existsSync(join(dir, f)))).toEqual([]);
  expect(existsSync(join(dir, 'keep.txt'))).toBe(true);
  expect(existsSync(join(dir, 'sub', 'inner'))).toBe(true);
});

test('no names: nothing happens', () => {
  writeFileSync(join(dir, 'a'), 'x');
  execFileSync('sh', ['-c', REMOVE_FILES_SCRIPT, 'sh'], { cwd: dir });
  expect(existsSync(join(dir, 'a'))).toBe(true);
});
