/**
 * One apply runs on the plugin's event loop: a container's flood of entries or a tree
 * thousands of folders deep costs it at most so much, and what is past the bound is said,
 * not applied.
 */
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { MAX_APPLY_DEPTH, MAX_APPLY_ENTRIES, OverlayApplier } from '../../../src/project/overlay-apply.js';
import { removeTempDirs, tempDir } from '../../support/temp-dirs.js';

afterAll(() => removeTempDirs());

test('more entries than an apply looks at: the first ones applied, the rest said and left', () => {
  const root = tempDir('gcd-bounds-project-');
  const up = tempDir('gcd-bounds-upper-');
  mkdirSync(join(up, 'many'));
  for (let i = 0; i < MAX_APPLY_ENTRIES + 50; i++) writeFileSync(join(up, 'many', `f${String(i).padStart(6, '0')}`), '');
  const report = new OverlayApplier(up, root).apply();
  // The folder itself counts as one entry.
  expect(report.created.length).toBe(MAX_APPLY_ENTRIES);
  expect(report.refused).toEqual([{ path: expect.stringMatching(/^many\/f\d+$/), why: expect.stringMatching(/more than 20000 entries/) }]);
  expect(existsSync(join(root, 'many', `f${String(MAX_APPLY_ENTRIES + 49).padStart(6, '0')}`))).toBe(false);
});

test('a tree deeper than an apply goes: what is below the bound is said and not made', () => {
  const root = tempDir('gcd-bounds-project-');
  const up = tempDir('gcd-bounds-upper-');
  const deep = Array.from({ length: MAX_APPLY_DEPTH + 20 }, () => 'd').join('/');
  mkdirSync(join(up, deep), { recursive: true });
  writeFileSync(join(up, deep, 'bottom.txt'), 'x');
  const report = new OverlayApplier(up, root).apply();
  expect(report.refused.map((r) => r.why)).toEqual([`deeper than ${MAX_APPLY_DEPTH} folders: what is below is not applied`]);
  expect(existsSync(join(root, deep, 'bottom.txt'))).toBe(false);
  expect(existsSync(join(root, 'd', 'd'))).toBe(true);
});
