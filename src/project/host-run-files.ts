/**
 * Files the host runs by itself, without anyone choosing to run the project's code: what a
 * container changed there is held back and named (overlay-apply.ts), never applied behind
 * the user's back. A path is held when any of its folders, or its own name, matches, at
 * any depth: a workspace's `package.json` or a test folder's `conftest.py` runs as surely
 * as the top one.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import { swallowed } from '../debug.js';
import { realPathOf } from '../paths.js';

/** Folders whose whole content the host runs or loads: git, installed packages, virtualenvs, editor and hook folders. */
const HOST_RUN_FOLDERS = new Set([
  '.git',
  'node_modules',
  '.venv',
  'venv',
  '.tox',
  '.nox',
  '.direnv',
  '.husky',
  '.githooks',
  '.vscode',
  '.idea',
  '.devcontainer',
  '.mvn',
  '.gradle',
  '.cargo',
  '.bundle',
  '.yarn',
  'gradle',
  'buildsrc',
  '.mise',
  '.git-hooks',
  '.zed',
  '.helix',
  '.fleet',
  '.theia',
]);

/** Names the host runs or loads where they are: plugin files, scripts, build files, tool configs that execute code. */
const HOST_RUN_NAMES = new Set([
  // GenAIcode and this plugin
  '.genaicoderc',
  '.genaicode-docker.json',
  '.genaicodeignore',
  // npm, yarn, pnpm, and JavaScript tool configs (GenAIcode's lintCommand is often `npm run lint`)
  'package.json',
  '.npmrc',
  '.yarnrc',
  '.yarnrc.yml',
  '.pnpmfile.cjs',
  '.babelrc',
  // make and shells
  'Makefile',
  'makefile',
  'GNUmakefile',
  '.envrc',
  '.env',
  // git and pre-commit
  '.gitattributes',
  '.gitmodules',
  '.gitconfig',
  '.pre-commit-config.yaml',
  '.pre-commit-config.yml',
  // Python: imported or executed by pytest, pip, tox, pylint, and by the interpreter itself
  'conftest.py',
  'pyproject.toml',
  'setup.py',
  'setup.cfg',
  'tox.ini',
  'noxfile.py',
  'pytest.ini',
  '.pylintrc',
  'pylintrc',
  'sitecustomize.py',
  'usercustomize.py',
  'pyvenv.cfg',
  // version managers that run hooks and tasks
  '.mise.toml',
  'mise.toml',
  '.tool-versions',
  '.nvmrc',
  '.python-version',
  // the golden languages' build files
  'pom.xml',
  'build.gradle',
  'build.gradle.kts',
  'settings.gradle',
  'settings.gradle.kts',
  'gradle.properties',
  'gradlew',
  'mvnw',
  'build.xml',
  'Cargo.toml',
  'build.rs',
  'go.mod',
  'go.work',
  'Gemfile',
  'Rakefile',
  'composer.json',
  'CMakeLists.txt',
  'meson.build',
  'Justfile',
  'justfile',
  'Dockerfile',
  'Containerfile',
  'Vagrantfile',
  'Earthfile',
  'Tiltfile',
  'Procfile',
  'Brewfile',
  // more JavaScript runtimes and task runners
  'bunfig.toml',
  'deno.json',
  'deno.jsonc',
  'pnpm-workspace.yaml',
  '.node-options',
  'nodemon.json',
  'nx.json',
  'turbo.json',
  'karma.conf.js',
  // more Python: pip's requirement files name indexes and editable sources; plugins named in tool configs are imported
  'requirements.txt',
  'Pipfile',
  'mypy.ini',
  '.mypy.ini',
  '.coveragerc',
  '.pytest.ini',
  'hatch.toml',
  'pdm.toml',
  'uv.toml',
  '.pdbrc',
  '.pdbrc.py',
  'fabfile.py',
  'dodo.py',
  'site.py',
  'SConstruct',
  'SConscript',
  'wscript',
  // Ruby, PHP, Go, Rust, JVM, C and C++
  'gems.rb',
  '.rspec',
  '.irbrc',
  '.pryrc',
  'Guardfile',
  'Capfile',
  '.rubocop.yml',
  'phpstan.neon',
  'phpstan.neon.dist',
  'psalm.xml',
  'rector.php',
  'magefile.go',
  'init.gradle',
  'mvnw.cmd',
  'gradlew.bat',
  'ivy.xml',
  'BUILD.bazel',
  'WORKSPACE.bazel',
  'MODULE.bazel',
  '.bazelrc',
  'configure',
  'configure.ac',
  'CMakePresets.json',
  'CMakeUserPresets.json',
  'conanfile.py',
  'conanfile.txt',
  'vcpkg.json',
  'meson_options.txt',
  'meson.options',
  // Nix and dev environments, entered by direnv, devbox, an editor or a dev-container host
  'flake.nix',
  'shell.nix',
  'default.nix',
  'devbox.json',
  '.devcontainer.json',
  'devcontainer.json',
  '.gitpod.yml',
  '.flaskenv',
  // version managers and editors that run project-local files
  '.rtx.toml',
  '.sdkmanrc',
  '.node-version',
  '.ruby-version',
  '.exrc',
  '.nvimrc',
  '.nvim.lua',
  '.lvimrc',
  '.vimrc',
  '.dir-locals.el',
  '.dir-locals-2.el',
  // git hook managers
  '.lfsconfig',
  '.pre-commit-hooks.yaml',
  '.overcommit.yml',
]);

const HOST_RUN_NAMES_LOWER = new Set([...HOST_RUN_NAMES].map((n) => n.toLowerCase()));

/** Bazel's names, matched in their own case only: in lower case they are the common `build/` and `workspace/` folders. */
const HOST_RUN_NAMES_EXACT = new Set(['BUILD', 'WORKSPACE']);

/** Name patterns (matched in lower case): `genaicode.config.*`, `*.config.js` and friends (eslint, vite, jest...), dotfile rc configs, `.pth` files Python runs at start. */
const HOST_RUN_PATTERNS = [
  /^genaicode\.config\./,
  /\.config\.([a-z]+\.)?([cm]?[jt]sx?|json5?)$/,
  /^(vitest|vite)\.workspace\./,
  /^(gruntfile|gulpfile)\./,
  /^\.(eslintrc|prettierrc|mocharc|babelrc|swcrc|lintstagedrc|huskyrc|stylelintrc|nycrc|c8rc|commitlintrc|postcssrc)/,
  /\.pth$/,
  /^(docker-)?compose(\..*)?\.ya?ml$/,
  /^\.?taskfile(\..*)?\.ya?ml$/,
  /^\.?lefthook(-local)?\.ya?ml$/,
  /^\.simple-git-hooks\.[cm]?js(on)?$/,
  /^\.?(mise|rtx)(\..*)?\.toml$/,
  /^\.?justfile$/,
  /^rakefile(\.rb)?$/,
  /^makefile\./,
  /\.mk$/,
  /\.cmake$/,
  /\.bzl$/,
  /\.sbt$/,
  /\.gradle(\.kts)?$/,
  /^phpunit\.xml/,
  /^\.php-cs-fixer(\..*)?\.php$/,
  /^rust-toolchain/,
  /^\.env\./,
  /^\.envrc\./,
  /\.(sublime-project|code-workspace)$/,
];

/** Project-relative paths (lower case, `/`-separated) a tool reads below a folder that is not held by its name alone. */
const HOST_RUN_PATHS = [/(^|\/)\.config\/mise(\/|\.|$)/];

/** Whether a folder of this name is held whole (nothing in it applied, and not walked: `node_modules` may hold 100k files). */
export function isHostRunFolder(name: string): boolean {
  return HOST_RUN_FOLDERS.has(name.toLowerCase());
}

/** Why the host would run `rel` (project-relative, `/`-separated), or undefined when it would not by itself. */
export function hostRunReason(rel: string, mode?: number): string | undefined {
  // Compared in lower case: on a case-insensitive file system (macOS, Windows) `.GENAICODERC` is `.genaicoderc`.
  const lower = rel.toLowerCase();
  const parts = lower.split('/');
  const name = parts[parts.length - 1] ?? '';
  const folder = parts.slice(0, -1).find((p) => HOST_RUN_FOLDERS.has(p));
  if (folder) return `in ${folder}/, which the host runs or loads`;
  if (HOST_RUN_FOLDERS.has(name)) return `${name}/ is a folder the host runs or loads: nothing in it is applied`;
  const ownName = rel.slice(rel.lastIndexOf('/') + 1);
  if (HOST_RUN_NAMES_LOWER.has(name) || HOST_RUN_NAMES_EXACT.has(ownName) || HOST_RUN_PATTERNS.some((p) => p.test(name)))
    return 'a file the host runs or loads by itself';
  if (HOST_RUN_PATHS.some((p) => p.test(lower))) return 'a file the host runs or loads by itself';
  if (mode !== undefined && (mode & 0o111) !== 0 && (mode & 0o170000) === 0o100000) return 'an executable file';
  return undefined;
}

/**
 * The project files GenAIcode imports as plugins: each `plugins` entry of the `.genaicoderc`
 * it finds (the project's own, or the nearest above it, as GenAIcode looks), joined to that
 * file's `rootDir` as GenAIcode joins it. Read from the host's project, never from what a
 * container wrote. Returned project-relative, in lower case; a file that cannot be read or
 * parsed names none (GenAIcode would refuse to start with it too).
 */
export function genaicodePluginFiles(projectRoot: string): Set<string> {
  const found = new Set<string>();
  let dir = resolve(projectRoot);
  for (;;) {
    const rc = join(dir, '.genaicoderc');
    if (existsSync(rc)) {
      try {
        const parsed = JSON.parse(readFileSync(rc, 'utf8')) as { rootDir?: unknown; plugins?: unknown };
        const rootDir = resolve(dir, typeof parsed.rootDir === 'string' ? parsed.rootDir : '.');
        for (const entry of Array.isArray(parsed.plugins) ? parsed.plugins : []) {
          if (typeof entry !== 'string') continue;
          const path = isAbsolute(entry) ? entry : join(rootDir, entry);
          // Both the path as written and where it really leads (a link in the project to the plugin file).
          for (const candidate of [path, realPathOf(path)]) {
            for (const base of [resolve(projectRoot), realPathOf(projectRoot)]) {
              const rel = relative(base, candidate);
              if (rel !== '' && rel !== '..' && !rel.startsWith(`..${sep}`) && !isAbsolute(rel))
                found.add(rel.split(sep).join('/').toLowerCase());
            }
          }
        }
      } catch (e) {
        swallowed(`reading ${rc} for its plugin files`, e);
      }
      return found;
    }
    const parent = dirname(dir);
    if (parent === dir) return found;
    dir = parent;
  }
}
