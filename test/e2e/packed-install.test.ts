/**
 * End-to-end, as a user installs it: the package packed with `npm pack`, installed into a
 * fresh project with its run-time dependencies only (no dev dependencies, no sources), loaded
 * by the real GenAIcode from `.genaicoderc` with the `./` path the README gives, and driven
 * through the host's own dispatcher to run a command in a container. The project has no
 * `genaicode` of its own: the plugin finds the GenAIcode that started the process.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { MINIMAL_IMAGE, requireEngine } from '../support/engine.js';
import { requireBuiltPackage, ROOT } from '../support/built-package.js';
import { actionAnswer, leftOf, removeLeftovers } from './docker-observe.js';
import { askQuestion, createProject, describeRun, expectCall, functionCall, startGenaicode, type Project } from './harness/harness.js';
import { E2E_HOST } from './harness/host.js';

const NAME = `e2e-packed-${randomBytes(3).toString('hex')}`;
const PLUGIN = './node_modules/genaicode-docker/dist/plugin.js';
let packDir: string;
let tarball: string;
let project: Project;
let pid: number | undefined;

function npm(args: string[], cwd: string): string {
  return execFileSync('npm', [...args, '--no-audit', '--no-fund', '--loglevel=error'], {
    cwd,
    encoding: 'utf-8',
    stdio: ['ignore', 'pipe', 'pipe'],
    timeout: 240_000,
  });
}

beforeAll(async () => {
  await requireEngine();
  requireBuiltPackage(path.join(ROOT, 'dist', 'plugin.js'));
  packDir = mkdtempSync(path.join(os.tmpdir(), 'gcd-pack-'));
  // The dist/ that `npm test` built; --ignore-scripts: rebuilding it here would change the
  // files other suites' children are loading.
  const packed = npm(['pack', '--ignore-scripts', '--pack-destination', packDir], ROOT).trim().split('\n').at(-1)!;
  tarball = path.join(packDir, packed);
  project = await createProject({
    plugins: [PLUGIN],
    explicitPrompt: 'Say hello from a container.',
    script: [
      askQuestion('plugin:startContainer', 'Starting a sandbox'),
      expectCall('startContainer', functionCall('startContainer', { image: MINIMAL_IMAGE, name: NAME })),
      askQuestion('plugin:runCommand', 'Saying hello'),
      expectCall('runCommand', functionCall('runCommand', { containerId: NAME, cmd: 'echo hello-from-the-packed-plugin' })),
      askQuestion('plugin:stopContainer', 'Done with it'),
      expectCall('stopContainer', functionCall('stopContainer', { containerId: NAME })),
      askQuestion('endConversation', 'Bye.'),
    ],
  });
  writeFileSync(path.join(project.projectDir, 'package.json'), JSON.stringify({ name: 'a-users-project', private: true }));
  npm(['install', '--omit=dev', '--ignore-scripts', tarball], project.projectDir);
}, 300_000);

afterAll(async () => {
  if (pid !== undefined) await removeLeftovers([pid]);
  await project?.cleanup();
  if (packDir) rmSync(packDir, { recursive: true, force: true });
}, 60_000);

describe(`the packed package, installed into a fresh project, in genaicode ${E2E_HOST.version}`, () => {
  test('holds what runs and nothing of the tests or sources', () => {
    const installed = path.join(project.projectDir, 'node_modules', 'genaicode-docker');
    expect(readdirSync(installed).sort()).toEqual(['LICENSE', 'README.md', 'dist', 'docker', 'package.json', 'scripts']);
    for (const absent of ['test', 'src', 'bench', 'tsconfig.json', 'jest.config.js'])
      expect(existsSync(path.join(installed, absent))).toBe(false);
    expect(existsSync(path.join(installed, 'scripts', 'container', 'exec-wrapper.sh'))).toBe(true);
    // Run-time dependencies only: no test runner, no compiler, and no host of its own.
    const modules = readdirSync(path.join(project.projectDir, 'node_modules'));
    expect(modules).toEqual(expect.arrayContaining(['dockerode', 'zod']));
    for (const dev of ['jest', 'typescript', 'ts-jest', 'genaicode']) expect(modules).not.toContain(dev);
  });

  test("loaded from .genaicoderc with a ./ path, it runs a command through the host's dispatcher and leaves no container", async () => {
    const child = startGenaicode(project, { timeoutMs: 120_000 });
    pid = child.pid;
    const run = await child.result;
    if (run.exitCode !== 0 || run.unusedScriptEntries !== 0) throw new Error(describeRun(run));
    expect(run.report?.genaicode?.version).toBe(E2E_HOST.version);
    expect(actionAnswer(run, 0).value).toMatchObject({ name: NAME, status: 'running' });
    expect(actionAnswer(run, 1).value).toMatchObject({ exitCode: 0, output: 'hello-from-the-packed-plugin\n' });
    expect(actionAnswer(run, 2).value).toMatchObject({ status: 'removed' });
    expect(await leftOf(pid!)).toEqual([]);
  }, 150_000);
});
