/**
 * Applying an overlay's upper folder to the project, on real folders (no engine): what the
 * kernel leaves there (files, folders, links, whiteouts, opaque folders, FIFOs) made by hand,
 * as a hostile container would leave them.
 */
import { execFileSync } from 'node:child_process';
import {
  chmodSync,
  closeSync,
  existsSync,
  fstatSync,
  lstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { hostRunReason } from '../../../src/project/host-run-files.js';
import { OverlayApplier } from '../../../src/project/overlay-apply.js';
import { linkProblem, sameInProject } from '../../../src/project/overlay-fs.js';
import { tempDir, removeTempDirs } from '../../support/temp-dirs.js';

afterAll(() => removeTempDirs());

const isRoot = process.getuid?.() === 0;

function tree(files: Record<string, string>, root = tempDir('gcd-apply-')): string {
  for (const [p, text] of Object.entries(files)) {
    mkdirSync(dirname(join(root, p)), { recursive: true });
    writeFileSync(join(root, p), text);
  }
  return root;
}

function setup(project: Record<string, string>, upper: Record<string, string> = {}) {
  const root = tree(project);
  const up = tree(upper);
  return { root, up, applier: new OverlayApplier(up, root) };
}

describe('linkProblem: a link is made in the project only when it stays inside', () => {
  const root = tempDir('gcd-links-');
  mkdirSync(join(root, 'src'));
  test.each([
    ['main.py', 'src/app.py', undefined],
    ['a/b/src', '../../src', undefined],
    ['x', '.', undefined],
    ['abs', '/etc/passwd', /absolute/],
    ['abs-ws', '/workspace/src', /absolute/],
    ['up', '..', /out of the project/],
    ['deep/er/up', '../../../etc', /out of the project/],
    ['climb', 'self/../..', /climbs after a name/],
    ['climb2', 'src/../../x', /climbs after a name/],
    ['empty', '', /empty/],
  ])('%s -> %s', (rel, target, problem) => {
    const found = linkProblem(root, rel, target);
    if (problem) expect(found).toMatch(problem);
    else expect(found).toBeUndefined();
  });

  test('a target that exists and really leads out (through a link of the project) is refused', () => {
    symlinkSync('/etc', join(root, 'etc-link'));
    expect(linkProblem(root, 'p', 'etc-link/passwd')).toMatch(/leads out/);
  });
});

describe('hostRunReason: files the host runs by itself, at any depth', () => {
  test.each([
    '.genaicoderc',
    'genaicode.config.mjs',
    'sub/dir/.genaicoderc',
    'node_modules/.bin/jest',
    'packages/a/node_modules/x/index.js',
    '.venv/bin/python',
    'tests/deep/conftest.py',
    'ws/pkg/package.json',
    'a/.envrc',
    'pom.xml',
    'mod/build.gradle.kts',
    '.cargo/config.toml',
    'pytest.ini',
    '.pylintrc',
    '.mise.toml',
    '.devcontainer/devcontainer.json',
    '.git/hooks/pre-commit',
    'vite.config.ts',
    '.eslintrc.json',
    'lib/site.pth',
  ])('%s', (p) => expect(hostRunReason(p)).toBeDefined());

  test.each(['src/app.py', 'README.md', 'build/out.txt', 'docs/config.md', '.pytest_cache/v/cache/nodeids'])('not %s', (p) =>
    expect(hostRunReason(p, 0o100644)).toBeUndefined(),
  );

  test('an executable file, anywhere', () => {
    expect(hostRunReason('bin/tool', 0o100755)).toBe('an executable file');
    expect(hostRunReason('bin/tool', 0o100644)).toBeUndefined();
  });
});

describe('OverlayApplier', () => {
  test('files and folders: created and changed, modes masked, set-id bits dropped and said; a second apply does nothing', () => {
    const { root, up, applier } = setup({ 'src/app.py': 'v1\n' }, { 'src/app.py': 'v2\n', 'new/deep/f.txt': 'f\n', tool: 'x' });
    chmodSync(join(up, 'tool'), 0o6644);
    const r = applier.apply();
    expect(r.created.sort()).toEqual(['new/', 'new/deep/', 'new/deep/f.txt', 'tool']);
    expect(r.changed).toEqual(['src/app.py']);
    expect(r.setIdDropped).toEqual(['tool']);
    expect(readFileSync(join(root, 'src/app.py'), 'utf8')).toBe('v2\n');
    expect(statSync(join(root, 'tool')).mode & 0o7777).toBe(0o644);
    // No temporary file is left beside the targets.
    expect(readdirSync(join(root, 'src'))).toEqual(['app.py']);
    const again = applier.apply();
    expect([...again.created, ...again.changed, ...again.deleted]).toEqual([]);
  });

  test('links out of the project, a folder swapped for a link, FIFOs: never made, each named once', () => {
    const outside = tree({ 'secret.txt': 'S' });
    const { root, up, applier } = setup({ 'src/a.py': 'a\n', 'lib/x.py': 'x\n' });
    symlinkSync(join(outside, 'secret.txt'), join(up, 'notes.md'));
    symlinkSync('../../../../../../etc', join(up, 'up'));
    // The container replaced the project's folder lib/ by a link to a host folder.
    symlinkSync(outside, join(up, 'lib'));
    symlinkSync('src/a.py', join(up, 'main.py'));
    execFileSync('mkfifo', [join(up, 'pipe.ts')]);
    const r = applier.apply();
    expect(r.refused.map((x) => x.path).sort()).toEqual(['lib', 'notes.md', 'pipe.ts', 'up']);
    expect(r.created).toEqual(['main.py']);
    expect(readlinkSync(join(root, 'main.py'))).toBe('src/a.py');
    expect(lstatSync(join(root, 'lib')).isDirectory()).toBe(true);
    expect(readFileSync(join(root, 'lib/x.py'), 'utf8')).toBe('x\n');
    for (const p of ['notes.md', 'up', 'pipe.ts']) expect(existsSync(join(root, p))).toBe(false);
    expect(applier.apply().refused).toEqual([]);
  });

  test('files the host runs are held (and whole folders of them, unwalked); their container versions can be kept for review', () => {
    const { root, applier } = setup(
      { 'package.json': '{}\n' },
      { 'package.json': '{"scripts":{"test":"id"}}\n', 'sub/conftest.py': 'import os\n', 'node_modules/.bin/x': 'x', 'ok.txt': 'ok' },
    );
    const r = applier.apply();
    expect(r.held.map((h) => h.path).sort()).toEqual(['node_modules', 'package.json', 'sub/conftest.py']);
    expect(r.created.sort()).toEqual(['ok.txt', 'sub/']);
    expect(readFileSync(join(root, 'package.json'), 'utf8')).toBe('{}\n');
    expect(existsSync(join(root, 'node_modules'))).toBe(false);
    const kept = join(tempDir('gcd-held-'), 'held');
    expect(applier.saveHeld(kept)).toBe(2);
    expect(readFileSync(join(kept, 'package.json'), 'utf8')).toBe('{"scripts":{"test":"id"}}\n');
    expect(statSync(join(kept, 'sub/conftest.py')).mode & 0o777).toBe(0o600);
  });

  test('an opaque folder (removed and made again) removes what the project had there, once', () => {
    const { root, up, applier } = setup({ 'lib/a.py': 'a', 'lib/b.py': 'b' }, { 'lib/c.py': 'c' });
    const xattr = createRequire(import.meta.url)('@napi-rs/xattr') as { setAttributeSync(p: string, n: string, v: string): void };
    xattr.setAttributeSync(join(up, 'lib'), 'user.overlay.opaque', 'y');
    const r = applier.apply();
    expect(r.deleted.sort()).toEqual(['lib/a.py', 'lib/b.py']);
    expect(readdirSync(join(root, 'lib'))).toEqual(['c.py']);
    // The host adds a file there later: it is the host's, not one the container hid.
    writeFileSync(join(root, 'lib/host.py'), 'h');
    writeFileSync(join(up, 'lib/d.py'), 'd');
    applier.apply();
    expect(readdirSync(join(root, 'lib')).sort()).toEqual(['c.py', 'd.py', 'host.py']);
  });

  test('a whiteout deletes the project entry (a folder too); one on a file the host runs is held', () => {
    if (!isRoot) return expect(isRoot).toBe(false); // a whiteout is a 0/0 character device: only root makes one
    const { root, up, applier } = setup({ 'gone.txt': 'g', 'dir/x': 'x', Makefile: 'all:\n' });
    for (const p of ['gone.txt', 'dir', 'Makefile']) execFileSync('mknod', [join(up, p), 'c', '0', '0']);
    const r = applier.apply();
    expect(r.deleted.sort()).toEqual(['dir/', 'gone.txt']);
    expect(r.held.map((h) => h.path)).toEqual(['Makefile']);
    expect(readdirSync(root)).toEqual(['Makefile']);
  });

  test('a file rewritten with the same bytes and mode (sed -i over every file) is no change: not rewritten, reported or held', () => {
    const { root, up, applier } = setup(
      { 'a.py': 'same\n', 'b.py': 'old\n', Makefile: 'all:\n', 'run.sh': 'echo\n', 'c.txt': 'c\n', 'd.txt': 'dd\n' },
      { 'a.py': 'same\n', 'b.py': 'new\n', Makefile: 'all:\n', 'run.sh': 'echo\n', 'c.txt': 'c\n', 'd.txt': 'de\n' },
    );
    chmodSync(join(root, 'run.sh'), 0o755);
    chmodSync(join(up, 'run.sh'), 0o755);
    // Same bytes, another mode: a change.
    chmodSync(join(up, 'c.txt'), 0o600);
    const inode = statSync(join(root, 'a.py')).ino;
    const r = applier.apply();
    expect(r.changed.sort()).toEqual(['b.py', 'c.txt', 'd.txt']);
    expect(r.held).toEqual([]);
    expect(statSync(join(root, 'a.py')).ino).toBe(inode);
    expect(statSync(join(root, 'c.txt')).mode & 0o777).toBe(0o600);
    // Its upper copy hides the project's: a host edit is still written into it.
    writeFileSync(join(root, 'a.py'), 'host fix\n');
    expect(applier.syncHostEdits().written).toEqual(['a.py']);
    expect(readFileSync(join(up, 'a.py'), 'utf8')).toBe('host fix\n');
    // A held file the container really changed is still held; a link in the project is never read as the same file.
    writeFileSync(join(up, 'Makefile'), 'all: evil\n');
    symlinkSync('a.py', join(root, 'l.py'));
    writeFileSync(join(up, 'l.py'), 'host fix\n');
    const again = applier.apply();
    expect(again.held.map((h) => h.path)).toEqual(['Makefile']);
    expect(again.changed).toEqual(['l.py']);
  });

  test('the same-bytes check never reads through a link on the way (a folder of the project that leads out)', () => {
    const outside = tree({ 'secret.txt': 'guess\n' });
    const root = tree({ 'in/secret.txt': 'guess\n' });
    symlinkSync(outside, join(root, 'out'));
    const up = tree({ 'out/secret.txt': 'guess\n' });
    const fd = openSync(join(up, 'out/secret.txt'), 'r');
    try {
      expect(sameInProject(fd, fstatSync(fd), root, 'out/secret.txt')).toBeUndefined();
      // The same bytes in a real folder of the project are the same file.
      expect(sameInProject(fd, fstatSync(fd), root, 'in/secret.txt')?.isFile()).toBe(true);
    } finally {
      closeSync(fd);
    }
  });

  test('the host edits a file the container changed: written into the upper copy; changed on both sides: the host version kept', () => {
    const { root, up, applier } = setup({ 'calc.py': 'v1\n' }, { 'calc.py': 'container\n' });
    applier.apply();
    writeFileSync(join(root, 'calc.py'), 'host fix\n');
    expect(applier.syncHostEdits()).toEqual({ written: ['calc.py'], deletedOnHost: [] });
    expect(readFileSync(join(up, 'calc.py'), 'utf8')).toBe('host fix\n');
    expect(applier.apply().changed).toEqual([]);
    // Both change before the next look: the host's stays, the container's is held.
    writeFileSync(join(root, 'calc.py'), 'host again\n');
    writeFileSync(join(up, 'calc.py'), 'container again\n');
    const r = applier.apply();
    expect(r.held).toEqual([{ path: 'calc.py', why: expect.stringMatching(/both on the host and in the container/) }]);
    expect(readFileSync(join(root, 'calc.py'), 'utf8')).toBe('host again\n');
  });

  test('an upper copy swapped for a link is never written through by the host-edit sync', () => {
    const outside = tree({ 'victim.txt': 'victim\n' });
    const { root, up, applier } = setup({ 'a.txt': '1\n' }, { 'a.txt': '2\n' });
    applier.apply();
    rmSync(join(up, 'a.txt'));
    symlinkSync(join(outside, 'victim.txt'), join(up, 'a.txt'));
    writeFileSync(join(root, 'a.txt'), 'host\n');
    applier.syncHostEdits();
    expect(readFileSync(join(outside, 'victim.txt'), 'utf8')).toBe('victim\n');
  });
});

describe('held: more files the host runs, by class, at any depth, in any case', () => {
  test.each([
    '.devcontainer.json',
    'lefthook.yml',
    'lefthook.yaml',
    'pkg/.lefthook.yml',
    '.overcommit.yml',
    '.simple-git-hooks.json',
    '.simple-git-hooks.js',
    'mise.local.toml',
    '.config/mise/config.toml',
    '.config/mise/conf.d/x.toml',
    '.config/mise.toml',
    '.mise/tasks/build',
    'flake.nix',
    'shell.nix',
    'nix/default.nix',
    'gems.rb',
    'compose.yml',
    'compose.yaml',
    'svc/docker-compose.yaml',
    'docker-compose.override.yml',
    'Taskfile.yml',
    'Taskfile.yaml',
    'phpunit.xml',
    'phpunit.xml.dist',
    '.rspec',
    'rust-toolchain',
    'rust-toolchain.toml',
    'bunfig.toml',
    'pnpm-workspace.yaml',
    '.exrc',
    'sub/.nvim.lua',
    '.pdbrc',
    'requirements.txt',
    'gulpfile.mjs',
    'babel.config.json',
    '.GENAICODERC',
    'NODE_MODULES/x',
    'Makefile.local',
    'x.code-workspace',
  ])('%s', (p) => expect(hostRunReason(p, 0o100644)).toBeDefined());

  test('Bazel files in their own case, not the build/ and workspace/ folders', () => {
    expect(hostRunReason('pkg/BUILD')).toBeDefined();
    expect(hostRunReason('WORKSPACE')).toBeDefined();
    expect(hostRunReason('build')).toBeUndefined();
    expect(hostRunReason('workspace')).toBeUndefined();
  });

  test.each(['src/config.toml', 'docs/compose.md', 'mise.md', 'src/shell.py'])('not %s', (p) =>
    expect(hostRunReason(p, 0o100644)).toBeUndefined(),
  );
});

describe('OverlayApplier: what would reach a held file by another name', () => {
  const rc = (plugins: unknown, rootDir = '.') => JSON.stringify({ rootDir, plugins });

  test("the plugin files the host project's .genaicoderc names are held, however the entry is written; a .genaicoderc the container wrote changes nothing", () => {
    const { root, applier } = setup(
      {
        '.genaicoderc': rc(['./genaicode-docker.plugin.mjs', 'plugins/p.js', 'lnk/q.mjs', 'genaicode-some-package', '../outside.mjs']),
        'genaicode-docker.plugin.mjs': 'export default {};\n',
        'plugins/p.js': 'export default {};\n',
        'real/q.mjs': 'export default {};\n',
      },
      {
        '.genaicoderc': rc([]),
        'genaicode-docker.plugin.mjs': 'pwned\n',
        'plugins/p.js': 'pwned\n',
        'real/q.mjs': 'pwned\n',
        'plugins/other.js': 'fine\n',
      },
    );
    symlinkSync('real', join(root, 'lnk'));
    const r = applier.apply();
    expect(r.held.map((h) => h.path).sort()).toEqual(['.genaicoderc', 'genaicode-docker.plugin.mjs', 'plugins/p.js', 'real/q.mjs']);
    expect(r.created).toEqual(['plugins/other.js']);
    for (const p of ['genaicode-docker.plugin.mjs', 'plugins/p.js', 'real/q.mjs'])
      expect(readFileSync(join(root, p), 'utf8')).toBe('export default {};\n');
  });

  test('plugin paths are joined to the rootDir of the nearest .genaicoderc, as GenAIcode joins them', () => {
    const parent = tree({ '.genaicoderc': rc(['proj/from-parent.mjs']), 'proj/app/p.mjs': 'ok\n' });
    const root = join(parent, 'proj');
    const up = tree({ 'from-parent.mjs': 'pwned\n', 'app/p.mjs': 'fine\n' });
    const r = new OverlayApplier(up, root).apply();
    expect(r.held.map((h) => h.path)).toEqual(['from-parent.mjs']);
    expect(r.changed).toEqual(['app/p.mjs']);

    const own = setup({ '.genaicoderc': rc(['p.mjs'], 'app'), 'app/p.mjs': 'ok\n' }, { 'app/p.mjs': 'pwned\n', 'p.mjs': 'fine\n' });
    const r2 = own.applier.apply();
    expect(r2.held.map((h) => h.path)).toEqual(['app/p.mjs']);
    expect(r2.created).toEqual(['p.mjs']);
  });

  test('a link with a harmless name to a held file, into a held folder, to an executable or to a folder holding one is held', () => {
    const { root, up, applier } = setup({
      '.genaicoderc': rc(['./plugin.mjs']),
      'plugin.mjs': 'export default {};\n',
      '.git/config': '[core]\n',
      'scripts/deploy.sh': '#!/bin/sh\n',
      'backend/package.json': '{}\n',
      'src/app.py': 'print(1)\n',
    });
    chmodSync(join(root, 'scripts/deploy.sh'), 0o755);
    symlinkSync('.git', join(root, 'g'));
    const links: Record<string, string> = {
      'docs/notes.md': '../.git/config',
      'src/settings.json': '../.genaicoderc',
      'docs/plugin.md': '../plugin.mjs',
      'docs/run.txt': '../scripts/deploy.sh',
      'docs/later.js': '../node_modules/x/index.js',
      'docs/b': '../backend',
      'docs/root': '..',
      'docs/hooks.txt': '../g/hooks/pre-commit',
      'docs/makefile.txt': '../sub/Makefile',
      'docs/ok.py': '../src/app.py',
    };
    mkdirSync(join(up, 'docs'));
    mkdirSync(join(up, 'src'));
    for (const [at, to] of Object.entries(links)) symlinkSync(to, join(up, at));
    const r = applier.apply();
    expect(r.held.map((h) => h.path).sort()).toEqual(
      Object.keys(links)
        .filter((p) => p !== 'docs/ok.py')
        .sort(),
    );
    expect(r.held.find((h) => h.path === 'docs/notes.md')?.why).toMatch(/link to \.git\/config/);
    expect(r.created.sort()).toEqual(['docs/', 'docs/ok.py']);
    expect(readdirSync(join(root, 'docs'))).toEqual(['ok.py']);
  });

  test('an executable, a held file, or a folder holding one replaced by a link, a folder or a plain file is held, and kept', () => {
    const { root, up, applier } = setup({
      'scripts/deploy.sh': '#!/bin/sh\necho deploy\n',
      'scripts/build.sh': '#!/bin/sh\necho build\n',
      'scripts/test.sh': '#!/bin/sh\necho test\n',
      'scripts/payload.txt': 'evil\n',
      Makefile: 'all:\n',
      'backend/conftest.py': '# ok\n',
      'backend/index.js': '1',
      'web/package.json': '{}\n',
      'deep/a/b/pyproject.toml': '[x]\n',
      'plain/readme.md': 'r\n',
    });
    for (const s of ['deploy', 'build', 'test']) chmodSync(join(root, `scripts/${s}.sh`), 0o755);
    mkdirSync(join(up, 'scripts'));
    symlinkSync('payload.txt', join(up, 'scripts/deploy.sh'));
    mkdirSync(join(up, 'scripts/build.sh'));
    writeFileSync(join(up, 'scripts/build.sh/x'), 'x');
    writeFileSync(join(up, 'scripts/test.sh'), 'not executable any more\n');
    mkdirSync(join(up, 'Makefile'));
    writeFileSync(join(up, 'Makefile/x'), 'x');
    writeFileSync(join(up, 'backend'), 'not-a-folder\n');
    symlinkSync('scripts', join(up, 'web'));
    writeFileSync(join(up, 'deep'), 'flat\n');
    writeFileSync(join(up, 'plain'), 'flat\n');
    const r = applier.apply();
    expect(r.held.map((h) => h.path).sort()).toEqual([
      'Makefile',
      'backend',
      'deep',
      'scripts/build.sh',
      'scripts/deploy.sh',
      'scripts/test.sh',
      'web',
    ]);
    expect(r.changed).toEqual(['plain']);
    expect(readFileSync(join(root, 'scripts/deploy.sh'), 'utf8')).toBe('#!/bin/sh\necho deploy\n');
    expect(statSync(join(root, 'scripts/build.sh')).isFile()).toBe(true);
    expect(readFileSync(join(root, 'scripts/test.sh'), 'utf8')).toBe('#!/bin/sh\necho test\n');
    expect(readFileSync(join(root, 'Makefile'), 'utf8')).toBe('all:\n');
    for (const p of ['backend/conftest.py', 'web/package.json', 'deep/a/b/pyproject.toml']) expect(existsSync(join(root, p))).toBe(true);
    expect(lstatSync(join(root, 'web')).isDirectory()).toBe(true);
  });

  test('modes: never writable by group or others', () => {
    const { root, up, applier } = setup({ 'a.txt': 'a' }, { 'a.txt': 'A', 'b.txt': 'b', 'c.txt': 'c', 'd/e.txt': 'e' });
    chmodSync(join(up, 'a.txt'), 0o666);
    chmodSync(join(up, 'b.txt'), 0o622);
    chmodSync(join(up, 'c.txt'), 0o4666);
    chmodSync(join(up, 'd'), 0o777);
    const r = applier.apply();
    expect(r.created.sort()).toEqual(['b.txt', 'c.txt', 'd/', 'd/e.txt']);
    expect(statSync(join(root, 'a.txt')).mode & 0o7777).toBe(0o644);
    expect(statSync(join(root, 'b.txt')).mode & 0o7777).toBe(0o600);
    expect(statSync(join(root, 'c.txt')).mode & 0o7777).toBe(0o644);
    expect(statSync(join(root, 'd')).mode & 0o022).toBe(0);
  });
});
