/**
 * scripts/engine/podman.sh start reuses a running Podman API service only when it does the
 * work (its _ping, version and a container list answer within a bound), and restarts one that
 * does not; a healthy one is kept. Each case runs in a state folder of its own
 * (GENAICODE_PODMAN_DIR), never the shared service's: a real service is wedged with SIGSTOP,
 * and stale services that answer only part of the API are stand-ins whose command line names
 * podman, as the script's pid check wants.
 */
import { execFile, spawn } from 'node:child_process';
import { existsSync, readFileSync, readlinkSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { poll } from '../../../src/retry.js';
import { removeTempDirs, tempDir } from '../../support/temp-dirs.js';

const SCRIPT = join(process.cwd(), 'scripts/engine/podman.sh');
const FAKE = join(process.cwd(), 'test/support/fake-podman-service.mjs');
const started: number[] = [];

function script(dir: string, cmd: 'start' | 'stop', cwd?: string): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      'bash',
      [SCRIPT, cmd],
      {
        ...(cwd ? { cwd } : {}),
        timeout: 110_000,
        env: { ...process.env, GENAICODE_PODMAN_DIR: dir, GENAICODE_PODMAN_HEALTH_TIMEOUT: '2' },
      },
      (error, stdout, stderr) => resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout, stderr }),
    );
  });
}

function servicePid(dir: string): number {
  const pid = Number(readFileSync(join(dir, 'service.pid'), 'utf8').trim());
  started.push(pid);
  return pid;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Whether the real service at the folder's socket lists containers (the work tests need). */
function lists(dir: string): Promise<boolean> {
  return new Promise((resolve) => {
    execFile(
      'curl',
      ['-fsS', '--max-time', '10', '--unix-socket', join(dir, 'podman.sock'), 'http://d/v1.40/containers/json'],
      (error, stdout) => resolve(!error && stdout.trim().startsWith('[')),
    );
  });
}

afterAll(() => {
  for (const pid of started) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  removeTempDirs();
});

test('a healthy service is reused; a wedged one (SIGSTOP: it answers nothing) is replaced by one that answers', async () => {
  const dir = tempDir('gcd-podman-svc-');
  const first = await script(dir, 'start');
  expect(first).toMatchObject({ code: 0 });
  expect(first.stdout).toBe(`export DOCKER_HOST=unix://${join(dir, 'podman.sock')}\n`);
  const pid = servicePid(dir);
  expect(await lists(dir)).toBe(true);

  const again = await script(dir, 'start');
  expect(again.code).toBe(0);
  expect(servicePid(dir)).toBe(pid);
  expect(again.stderr).not.toMatch(/restarting/);

  process.kill(pid, 'SIGSTOP');
  const restarted = await script(dir, 'start');
  expect(restarted.code).toBe(0);
  expect(restarted.stderr).toMatch(`podman system service ${pid} does not answer`);
  const next = servicePid(dir);
  expect(next).not.toBe(pid);
  expect(alive(pid)).toBe(false);
  expect(await lists(dir)).toBe(true);

  expect((await script(dir, 'stop')).code).toBe(0);
  expect(alive(next)).toBe(false);
  expect(existsSync(join(dir, 'podman.sock'))).toBe(false);
});

/** Runs a container through the folder's service with the docker CLI: its output, or the CLI's error. */
function runsContainer(dir: string): Promise<string> {
  return new Promise((resolve) => {
    execFile(
      'docker',
      ['run', '--rm', 'genaicode-docker/sandbox-minimal:latest', 'echo', 'started'],
      { timeout: 60_000, env: { ...process.env, DOCKER_HOST: `unix://${join(dir, 'podman.sock')}` } },
      (error, stdout, stderr) => resolve(error ? `failed: ${stderr.trim()}` : stdout),
    );
  });
}

test('started from a folder that is deleted later, the service still starts containers; one left in a deleted folder is replaced', async () => {
  // Every conmon works in the service's folder: a clone that started it and was then deleted
  // made each start fail ("Failed to get working directory").
  const dir = tempDir('gcd-podman-svc-');
  const clone = tempDir('gcd-podman-clone-');
  expect((await script(dir, 'start', clone)).code).toBe(0);
  const pid = servicePid(dir);
  rmSync(clone, { recursive: true, force: true });
  expect(await runsContainer(dir)).toBe('started\n');
  expect((await script(dir, 'stop')).code).toBe(0);

  // A service some older set-up left in a deleted folder: not reused.
  const stale = spawn('podman', ['system', 'service', '--time=0', `unix://${join(dir, 'podman.sock')}`], {
    cwd: tempDir('gcd-podman-old-clone-'),
    stdio: 'ignore',
    detached: true,
    env: { ...process.env, CONTAINERS_CONF: join(dir, 'containers.conf') },
  });
  const stalePid = stale.pid as number;
  started.push(stalePid);
  writeFileSync(join(dir, 'service.pid'), `${stalePid}\n`);
  expect(await poll(async () => ((await lists(dir)) ? true : undefined), { timeoutMs: 30_000, intervalMs: 200 })).toBe(true);
  rmSync(readlinkSync(`/proc/${stalePid}/cwd`), { recursive: true, force: true });
  const r = await script(dir, 'start');
  expect(r.code).toBe(0);
  expect(r.stderr).toMatch(`podman system service ${stalePid} runs in a folder that was deleted`);
  expect(servicePid(dir)).not.toBe(stalePid);
  expect(await runsContainer(dir)).toBe('started\n');
  expect((await script(dir, 'stop')).code).toBe(0);
  expect(alive(pid)).toBe(false);
});

test.each([
  ['answers _ping but hangs on the rest', 'ping-only'],
  ['answers _ping but fails the rest (500)', 'broken'],
  ['accepts connections but never answers', 'silent'],
])('a stale service that %s is killed (SIGKILL when SIGTERM does not end it) and a real one started', async (_what, mode) => {
  const dir = tempDir('gcd-podman-svc-');
  const socket = join(dir, 'podman.sock');
  const fake = spawn(process.execPath, [FAKE, socket, mode], { stdio: 'ignore', detached: true });
  const fakePid = fake.pid as number;
  started.push(fakePid);
  expect(await poll(() => (existsSync(socket) ? true : undefined), { timeoutMs: 10_000, intervalMs: 50 })).toBe(true);
  writeFileSync(join(dir, 'service.pid'), `${fakePid}\n`);
  writeFileSync(join(dir, 'containers.conf'), '[containers]\ndefault_ulimits = []\n');

  const r = await script(dir, 'start');
  expect(r.code).toBe(0);
  expect(r.stderr).toMatch(`podman system service ${fakePid} does not answer`);
  const pid = servicePid(dir);
  expect(pid).not.toBe(fakePid);
  expect(fake.exitCode ?? fake.signalCode ?? (await new Promise((res) => fake.once('exit', (c, s) => res(c ?? s))))).toBe('SIGKILL');
  expect(await lists(dir)).toBe(true);
  expect((await script(dir, 'stop')).code).toBe(0);
  expect(alive(pid)).toBe(false);
});
