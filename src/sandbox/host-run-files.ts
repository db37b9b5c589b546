/**
 * Files the host runs by itself, without anyone choosing to run the project's code: what a
 * container changed there is held back and named (overlay-apply.ts), never applied behind
 * the user's back. A path is held when any of its folders, or its own name, matches, at
 * any depth: a workspace's `package.json` or a test folder's `conftest.py` runs as surely
 * as the top one.
 */

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
  'Taskfile.yml',
  'Dockerfile',
  'docker-compose.yml',
  'compose.yaml',
]);

/** Name patterns: `genaicode.config.*`, `*.config.js` and friends (eslint, vite, jest...), dotfile rc configs, `.pth` files Python runs at start. */
const HOST_RUN_PATTERNS = [
  /^genaicode\.config\./,
  /\.config\.[cm]?[jt]s$/,
  /^\.(eslintrc|prettierrc|mocharc|babelrc|swcrc|lintstagedrc|huskyrc|stylelintrc)/,
  /\.pth$/,
  /^docker-compose\..*ya?ml$/,
];

/** Whether a folder of this name is held whole (nothing in it applied, and not walked: `node_modules` may hold 100k files). */
export function isHostRunFolder(name: string): boolean {
  return HOST_RUN_FOLDERS.has(name);
}

/** Why the host would run `rel` (project-relative, `/`-separated), or undefined when it would not by itself. */
export function hostRunReason(rel: string, mode?: number): string | undefined {
  const parts = rel.split('/');
  const name = parts[parts.length - 1] ?? '';
  const folder = parts.slice(0, -1).find((p) => HOST_RUN_FOLDERS.has(p));
  if (folder) return `in ${folder}/, which the host runs or loads`;
  if (HOST_RUN_FOLDERS.has(name)) return `${name}/ is a folder the host runs or loads: nothing in it is applied`;
  if (HOST_RUN_NAMES.has(name) || HOST_RUN_PATTERNS.some((p) => p.test(name))) return 'a file the host runs or loads by itself';
  if (mode !== undefined && (mode & 0o111) !== 0 && (mode & 0o170000) === 0o100000) return 'an executable file';
  return undefined;
}
