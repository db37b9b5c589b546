/**
 * Settling an overlay whose owner died: the applier has no memory of what the owner applied,
 * so a file the user edited on the host after the owner's last apply is kept as the user left
 * it, and the container's version is set aside for review; the rest is applied as usual.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readFileSync, utimesSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { heldFolder, markApplied, settleOverlay } from '../../../src/sandbox/overlay-orphans.js';
import { listProjectOverlays } from '../../../src/project/project-overlay.js';
import { removeTempDirs, tempDir } from '../../support/temp-dirs.js';

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

describe('only records this package made are settled', () => {
  function planted(state: string, mode: number, recordMode: number): string {
    const dir = join(state, 'overlays', `planted-${mode.toString(8)}-${recordMode.toString(8)}`);
    mkdirSync(join(dir, 'upper'), { recursive: true });
    chmodSync(dir, mode);
    writeFileSync(join(dir, 'overlay.json'), JSON.stringify({ projectRoot: '/home/someone', container: 'c', mode: 'rw', owner: 'h:1' }));
    chmodSync(join(dir, 'overlay.json'), recordMode);
    return dir;
  }

  test.each([
    ['0755 with a 0644 record, as a git checkout leaves them', 0o755, 0o644],
    ['0775 with a 0664 record, group-writable', 0o775, 0o664],
    ['0700 with a readable 0644 record', 0o700, 0o644],
    ['0750 with a 0600 record, a folder others may enter', 0o750, 0o600],
  ])('a folder %s is not a record of ours', (_what, mode, recordMode) => {
    const state = tempDir('gcd-planted-');
    planted(state, mode, recordMode);
    expect(listProjectOverlays(state)).toEqual([]);
  });

  test('one made private, as this package makes them, is', () => {
    const state = tempDir('gcd-planted-');
    const dir = planted(state, 0o700, 0o600);
    expect(listProjectOverlays(state).map((o) => o.dir)).toEqual([dir]);
  });
});
