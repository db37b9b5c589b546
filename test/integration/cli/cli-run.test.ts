/**
 * The `genaicode-docker run` command as a person uses it (the built CLI, a real engine):
 * exit codes, --json, and Ctrl-C cancelling the command rather than killing the CLI; and
 * `demo`, the README's main job.
 */
import { spawn, spawnSync } from 'node:child_process';
import { chownSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { CLI, requireBuiltPackage } from '../../support/built-package.js';
import { listManaged, requireEngine, waitFor } from '../../support/engine.js';
import { tempDir, removeTempDirs } from '../../support/temp-dirs.js';

beforeAll(async () => {
  await requireEngine();
  requireBuiltPackage(CLI);
});
afterAll(() => removeTempDirs());

function runCli(
  args: string[],
  cwd = tempDir('gcd-cli-run-'),
  extraEnv: Record<string, string> = {},
): { status: number | null; stdout: string; stderr: string } {
  const env = {
    ...process.env,
    GENAICODE_DOCKER_CONFIRM_START: 'false',
    XDG_STATE_HOME: tempDir('gcd-cli-state-'),
    XDG_CONFIG_HOME: tempDir('gcd-cli-config-'),
    ...extraEnv,
  };
  const r = spawnSync(process.execPath, [CLI, ...args], { cwd, encoding: 'utf8', timeout: 60_000, env });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

test('a golden image that is not built here: IMAGE_NOT_FOUND saying how to build it, never a pull; a malformed one: INVALID_ARGUMENT', () => {
  const missing = runCli(['run', '--image', 'genaicode-docker/does-not-exist:1', '--', 'true']);
  expect(missing.status).toBe(125);
  expect(missing.stderr).toContain('IMAGE_NOT_FOUND');
  expect(missing.stderr).toMatch(/never pulled/);
  expect(missing.stderr).toContain('build-offline.sh');
  for (const image of ['genaicode-docker/.', 'genaicode-docker/..', 'genaicode-docker/A']) {
    const bad = runCli(['run', '--json', '--image', image, '--', 'true']);
    expect(bad.status).toBe(125);
    expect(JSON.parse(bad.stdout)).toMatchObject({ code: 'INVALID_ARGUMENT' });
  }
}, 90_000);

test('doctor reports the trust settings in force, from the project’s config file', () => {
  // With the sandbox check, doctor says how the disk limit is enforced (overlay2 on ext4: measured).
  const checked = runCli(['doctor']);
  expect(checked.stdout).toMatch(
    /^disk +(the limit \(2 GiB\) is enforced by the engine|the storage driver has no quota: the limit \(2 GiB\) is measured)/m,
  );
  const plain = runCli(['doctor', '--no-sandbox-check']);
  expect(plain.status).toBe(0);
  // The GenAIcode beside this package (the repository's 0.9.5), named first.
  expect(plain.stdout).toMatch(/^host +GenAIcode 0\.9\.5 at \S+node_modules\/genaicode: the model picks actions through askQuestion/);
  expect(plain.stdout).toMatch(/^pulls +missing allowed images are pulled.*never pulled \(built here\): genaicode-docker\/\*$/m);
  expect(plain.stdout).toMatch(/^mounts +allowed: \(none\); with a writable mount containers run .*never as root$/m);
  expect(plain.stdout).toMatch(/^logs +\/.*genaicode-docker\/logs$/m);
  // The user's own file sets trust; the project's may only tune and narrow.
  const project = tempDir('gcd-cli-doctor-');
  const own = join(tempDir('gcd-cli-own-'), 'config.json');
  writeFileSync(
    own,
    JSON.stringify({
      images: { localOnly: [], pull: false },
      plugin: { confirmStart: false },
      allowRootWithWritableMounts: true,
      logs: { dir: join(project, 'build/logs') },
    }),
  );
  const custom = runCli(['doctor', '--no-sandbox-check'], project, {
    GENAICODE_DOCKER_CONFIG: own,
    GENAICODE_DOCKER_CONFIRM_START: 'false',
  });
  expect(custom.stdout).toMatch(/^pulls +off: nothing is pulled; never pulled \(built here\): \(none\)$/m);
  expect(custom.stdout).toMatch(/^confirm +containers start without asking the user/m);
  expect(custom.stdout).toMatch(/or as root \(allowRootWithWritableMounts\)$/m);
  expect(custom.stdout).toMatch(/^logs +.*build\/logs \(inside the project: GenAIcode may send/m);
  expect(custom.stdout).toContain(`config       from defaults < ${own} < environment`);
  writeFileSync(join(project, '.genaicode-docker.json'), JSON.stringify({ images: { localOnly: [] } }));
  const hostile = runCli(['doctor', '--no-sandbox-check'], project);
  expect(hostile.status).not.toBe(0);
  expect(hostile.stderr + hostile.stdout).toMatch(/images\.localOnly drops genaicode-docker\/\*/);
  // Text from config files reaches the terminal with its control characters named.
  writeFileSync(join(project, '.genaicode-docker.json'), JSON.stringify({ images: { allow: ['\u001b[2K\u001b[1Gpython:*'] } }));
  const forged = runCli(['doctor', '--no-sandbox-check'], project);
  // A project's allowlist narrows the trusted one; doctor shows it, escaped, on its own line.
  expect(forged.stdout).toMatch(/^images +allowed: .*; narrowed by the project to \\x1b\[2K\\x1b\[1Gpython:\*$/m);
  writeFileSync(own, JSON.stringify({ images: { localOnly: ['genaicode-docker/*', '\u001b[8mhidden'] } }));
  writeFileSync(join(project, '.genaicode-docker.json'), '{}');
  const shown = runCli(['doctor', '--no-sandbox-check'], project, { GENAICODE_DOCKER_CONFIG: own });
  expect(shown.stdout).toContain('\\x1b[8mhidden');
  for (const r of [forged, shown]) expect(r.stdout + r.stderr).not.toContain('\u001b');
}, 90_000);

test("exits with the command's exit code, 124 on timeout; --json prints the result object", () => {
  const ok = runCli(['run', '--json', '--', 'echo hi; echo oops >&2; exit 3']);
  expect(ok.status).toBe(3);
  const r = JSON.parse(ok.stdout) as { exitCode: number; stdout: string; stderr: string; canceled: boolean };
  expect(r).toMatchObject({ exitCode: 3, stdout: 'hi\n', stderr: 'oops\n', canceled: false });
  expect(runCli(['run', '--timeout-ms', '1000', '--', 'sleep 30']).status).toBe(124);
  const bad = runCli(['run', '--json', '--image', 'nope/never:1', '--', 'true']);
  expect(bad.status).toBe(125);
  expect(JSON.parse(bad.stdout)).toMatchObject({ code: 'IMAGE_NOT_ALLOWED' });
}, 90_000);

test('--answer prints the answer the model gets: short output whole; long output summarized with the failure’s key lines; a refusal as { error, code }', () => {
  const short = runCli(['run', '--answer', '--', 'echo hi; exit 3']);
  expect(short.status).toBe(3);
  const s = JSON.parse(short.stdout) as Record<string, unknown>;
  expect(s).toMatchObject({ exitCode: 3, output: 'hi\n' });
  expect(s).not.toHaveProperty('stdout');
  // A unittest failure after 300 lines of progress: more than the model is given whole.
  const report = 'echo "FAIL: test_x (t.T.test_x)"; echo "AssertionError: 2 != 5"; echo "FAILED (failures=1)"';
  const long = runCli(['run', '--answer', '--', `i=0; while [ $i -lt 300 ]; do echo "step $i ok"; i=$((i+1)); done; ${report}; exit 1`]);
  expect(long.status).toBe(1);
  expect(long.stdout.trim().split('\n')).toHaveLength(1);
  const a = JSON.parse(long.stdout) as { summary?: string; keyLines?: string[]; output?: string; logPath: string };
  expect(a.output).toBeUndefined();
  expect(a.summary).toMatch(/^FAILED: exit code 1\./);
  expect(a.keyLines).toEqual(['FAIL: test_x (t.T.test_x)', 'AssertionError: 2 != 5', 'FAILED (failures=1)']);
  expect(readFileSync(a.logPath, 'utf8')).toContain('step 299 ok\nFAIL: test_x');
  const refused = runCli(['run', '--answer', '--image', 'nope/never:1', '--', 'true']);
  expect(refused.status).toBe(125);
  expect(JSON.parse(refused.stdout)).toMatchObject({ code: 'IMAGE_NOT_ALLOWED' });
  const both = runCli(['run', '--answer', '--json', '--', 'true']);
  expect(both.status).not.toBe(0);
  expect(both.stderr).toMatch(/'--answer' cannot be used with option '--json'/);
}, 90_000);

test('--project mounts the current folder (or --project-dir) at the working folder, as the plugin does, within project.mount', () => {
  const project = tempDir('gcd-cli-project-');
  writeFileSync(join(project, 'notes.txt'), 'hello from the project\n');
  const json = (r: { stdout: string }) => JSON.parse(r.stdout) as { exitCode: number; stdout: string; stderr: string };
  // Read-only: the file is there, a write is refused by the file system.
  const ro = runCli(['run', '--json', '--project', 'ro', '--', 'pwd; cat notes.txt; touch made-here'], project);
  expect(json(ro)).toMatchObject({
    stdout: '/workspace\nhello from the project\n',
    stderr: expect.stringMatching(/Read-only file system/),
  });
  expect(existsSync(join(project, 'made-here'))).toBe(false);
  // Without --project the working folder is empty, as before.
  expect(json(runCli(['run', '--json', '--', 'ls -A'], project)).stdout).toBe('');
  // The project named from elsewhere; a folder alone means read-only.
  const elsewhere = runCli(['run', '--json', '--project-dir', project, '--', 'cat notes.txt; touch x'], tempDir('gcd-cli-run-'));
  expect(json(elsewhere)).toMatchObject({ stdout: 'hello from the project\n', stderr: expect.stringMatching(/Read-only file system/) });
  // Writable only when the user's configuration allows it (project.mount is ro by default).
  const refused = runCli(['run', '--json', '--project', 'rw', '--', 'touch made-here'], project);
  expect(refused.status).toBe(125);
  expect(JSON.parse(refused.stdout)).toMatchObject({ code: 'POLICY_VIOLATION' });
  const own = join(tempDir('gcd-cli-own-'), 'config.json');
  writeFileSync(own, JSON.stringify({ project: { mount: 'rw' }, allowRootWithWritableMounts: true }));
  const rw = runCli(['run', '--json', '--project', 'rw', '--', 'echo written > made-here; echo all: > Makefile; rm notes.txt'], project, {
    GENAICODE_DOCKER_CONFIG: own,
  });
  // The one JSON line says what reached the project and what was held back, as stderr does without --json.
  expect(JSON.parse(rw.stdout)).toMatchObject({
    exitCode: 0,
    projectChanges: {
      created: ['made-here'],
      changed: [],
      deleted: ['notes.txt'],
      counts: { created: 1, changed: 0, deleted: 1 },
      warnings: [expect.stringMatching(/^Makefile: .*NOT applied/)],
    },
  });
  expect(rw.stdout.trim().split('\n')).toHaveLength(1);
  expect(readFileSync(join(project, 'made-here'), 'utf8')).toBe('written\n');
  expect(existsSync(join(project, 'Makefile'))).toBe(false);
  writeFileSync(join(project, 'notes.txt'), 'hello from the project\n');
  // scratch applies nothing: no change list.
  const scratch = runCli(['run', '--json', '--project', 'scratch', '--', 'echo more > made-here'], project, {
    GENAICODE_DOCKER_CONFIG: own,
  });
  expect(JSON.parse(scratch.stdout)).not.toHaveProperty('projectChanges');
  expect(readFileSync(join(project, 'made-here'), 'utf8')).toBe('written\n');
  // A project folder that is not one: a sentence, nothing started.
  const missing = runCli(['run', '--project-dir', join(project, 'nope'), '--', 'true']);
  expect(missing.status).not.toBe(0);
  expect(missing.stderr).toMatch(/INVALID_ARGUMENT: --project-dir ".*nope" is not a folder\./);
}, 120_000);

test('the first Ctrl-C cancels the command: its result is printed (canceled, 137) and no container is left', async () => {
  const child = spawn(process.execPath, [CLI, 'run', '--json', '--', 'sleep 300'], {
    cwd: tempDir('gcd-cli-run-'),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (b: Buffer) => (stdout += b.toString()));
  child.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
  // 'close', not 'exit': the last of stdout and stderr may arrive after the process is gone.
  const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
  const owner = { 'genaicode-docker.owner': `${hostname()}:${child.pid}` };
  // Running once the sleep shows up in the container.
  await waitFor(
    'the command to run',
    async () => {
      const [c] = await listManaged(owner);
      if (!c) return undefined;
      const top = spawnSync('docker', ['top', c.id], { encoding: 'utf8' });
      return top.stdout.includes('sleep 300') ? true : undefined;
    },
    30_000,
    200,
  );
  child.kill('SIGINT');
  expect(await exited).toBe(137);
  expect(stderr).toContain('canceling');
  expect(JSON.parse(stdout)).toMatchObject({ command: 'sleep 300', exitCode: 137, canceled: true, timedOut: false });
  expect(await listManaged(owner)).toEqual([]);
}, 90_000);

test("demo, the README's main job: four commands as the model sees them, all as expected, nothing left behind", async () => {
  const child = spawnSync(process.execPath, [CLI, 'demo'], { cwd: tempDir('gcd-cli-demo-'), encoding: 'utf8', timeout: 120_000 });
  expect(child.stderr).toBe('');
  // The verdict line first: on a failure, the message shows the demo's whole output.
  expect(child.stdout).toContain('demo: all four results as expected');
  expect(child.stdout).not.toContain('LEFT BEHIND');
  expect(child.status).toBe(0);
  // The huge output's answer has the error from the middle of its 50 MB.
  expect(child.stdout).toContain(`"ld: error: undefined reference to 'parse_config'"`);
  expect(child.stdout).toMatch(/"timedOut": true/);
  const name = /started (genaicode-docker-\S+)/.exec(child.stdout)?.[1];
  expect(name).toBeDefined();
  expect((await listManaged()).map((c) => c.name)).not.toContain(name);
}, 150_000);

test('run --project: scratch lets the command write and leaves the project as it was; rw applies; more than project.mount is refused', () => {
  const project = tempDir('gcd-cli-project-');
  writeFileSync(join(project, 'app.py'), 'print(1)\n');
  if (process.getuid?.() === 0) {
    chownSync(project, 1000, 1000);
    chownSync(join(project, 'app.py'), 1000, 1000);
  }
  const image = ['--image', 'genaicode-docker/sandbox-python:latest'];
  const scratch = runCli(['run', ...image, '--project', 'scratch', '--', 'mkdir -p .cache && echo c > .cache/x && cat app.py'], project, {
    GENAICODE_DOCKER_PROJECT_MOUNT: 'scratch',
  });
  expect(scratch).toMatchObject({ status: 0, stdout: expect.stringContaining('print(1)') });
  expect(existsSync(join(project, '.cache'))).toBe(false);
  const refused = runCli(['run', ...image, '--project', 'rw', '--', 'true'], project, { GENAICODE_DOCKER_PROJECT_MOUNT: 'scratch' });
  expect(refused.status).toBe(125);
  expect(refused.stderr).toContain('project.mount allows at most scratch');
  const rw = runCli(['run', ...image, '--project', 'rw', '--', 'echo made > made.txt; ln -s /etc/passwd p'], project, {
    GENAICODE_DOCKER_PROJECT_MOUNT: 'rw',
  });
  expect(rw.status).toBe(0);
  expect(rw.stderr).toMatch(/project: 1 created/);
  expect(rw.stderr).toMatch(/warning: p: an absolute link/);
  expect(readFileSync(join(project, 'made.txt'), 'utf8')).toBe('made\n');
  expect(existsSync(join(project, 'p'))).toBe(false);
}, 90_000);
