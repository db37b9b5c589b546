/**
 * Settling an overlay whose owner died: the applier has no memory of what the owner applied,
 * so a file the user edited on the host after the owner's last apply is kept as the user left
 * it, and the container's version is set aside for review; the rest is applied as usual.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, utimesSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { heldFolder, markApplied, settleOverlay } from '../../src/sandbox/overlay-orphans.js';
import { removeTempDirs, tempDir } from '../support/temp-dirs.js';

afterAll(() => removeTempDirs());

function write(path: string, text: string, mtime?: Date): void {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, text);
  if (mtime) utimesSync(path, mtime, mtime);
}

test("the user's host edits made after the owner's last apply survive a later settling", () => {
  const state = tempDir('gcd-orphan-state-');
  const dir = join(state, 'overlays', 'ov-1');
  const project = tempDir('gcd-orphan-project-');
  const past = new Date(Date.now() - 60_000);
  // What the owner applied a minute ago: app.py and gone.py as the container had them.
  write(join(project, 'src', 'app.py'), 'container v1\n', past);
  write(join(project, 'src', 'gone.py'), 'kept by the user\n', past);
  write(join(project, 'src', 'util.py'), 'old\n', past);
  mkdirSync(join(dir, 'upper'), { recursive: true });
  write(join(dir, 'upper', 'src', 'app.py'), 'container v1\n', past);
  write(join(dir, 'upper', 'src', 'util.py'), 'container v2\n', past);
  markApplied(dir);
  utimesSync(join(dir, 'applied'), past, past);
  // The container deleted gone.py (a whiteout) after the owner's last apply.
  execFileSync('mknod', [join(dir, 'upper', 'src', 'gone.py'), 'c', '0', '0']);
  // Then the owner died, and the user edited app.py and gone.py on the host.
  write(join(project, 'src', 'app.py'), 'the user fixed it\n');
  write(join(project, 'src', 'gone.py'), 'the user changed it\n');

  const settled = settleOverlay(dir, 'c1', project, 'rw', state);

  expect(readFileSync(join(project, 'src', 'app.py'), 'utf8')).toBe('the user fixed it\n');
  expect(readFileSync(join(project, 'src', 'gone.py'), 'utf8')).toBe('the user changed it\n');
  // Not edited by the user: the container's change is applied.
  expect(readFileSync(join(project, 'src', 'util.py'), 'utf8')).toBe('container v2\n');
  expect(settled.held).toEqual(expect.arrayContaining(['src/app.py', 'src/gone.py']));
  expect(readFileSync(join(heldFolder(state, dir), 'src', 'app.py'), 'utf8')).toBe('container v1\n');
  expect(existsSync(dir)).toBe(false);
});
