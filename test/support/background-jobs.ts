/**
 * The CLI's background jobs as the tests drive them: the built CLI with a state folder of its
 * own per test (so its jobs folder holds only its jobs), and what is left observed through the
 * docker CLI and /proc, not through the code under test.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { CLI, requireBuiltPackage } from './built-package.js';
import { docker, listManaged, requireEngine } from './engine.js';
import { removeTempDirs, tempDir } from './temp-dirs.js';

/** The state folders of this file's tests. */
export const stateDirs: string[] = [];

/**
 * The preamble of a jobs test file: an engine and the built CLI before any test; after all,
 * every job of its tests with its supervisor ended and its container gone (leftovers are
 * removed, then reported as a failure).
 */
export function jobsSuite(): void {
  beforeAll(async () => {
    await requireEngine();
    requireBuiltPackage(CLI);
  });
  afterAll(leftBehind);
}

async function leftBehind(): Promise<void> {
  // Every job of these tests: its supervisor ended, its container gone. Leftovers are removed, then reported.
  const left: string[] = [];
  for (const dir of stateDirs)
    for (const r of records(dir)) {
      if (alive(r.pid)) {
        process.kill(r.pid, 'SIGKILL');
        left.push(`supervisor ${r.pid} of ${r.id}`);
      }
      if (r.container && (await containerThere(r.container.name))) {
        await docker(['rm', '-f', r.container.name]);
        left.push(`container ${r.container.name}`);
      }
    }
  removeTempDirs();
  if (left.length) throw new Error(`Left behind: ${left.join(', ')}`);
}

export interface Job {
  id: string;
  pid: number;
  state: string;
  logPath?: string;
  container?: { id: string; name: string };
}

export interface Cli {
  status: number | null;
  stdout: string;
  stderr: string;
}

/** A CLI with a state (and log) folder of its own. */
export function cliWith(state = tempDir('gcd-bg-state-')): {
  run: (...args: string[]) => Cli;
  spawn: (...args: string[]) => ReturnType<typeof spawn>;
  logsDir: string;
} {
  stateDirs.push(state);
  const cwd = tempDir('gcd-bg-cwd-');
  const env = {
    ...process.env,
    GENAICODE_DOCKER_CONFIRM_START: 'false',
    XDG_STATE_HOME: state,
    XDG_CONFIG_HOME: tempDir('gcd-bg-config-'),
  };
  return {
    run: (...args) => {
      const r = spawnSync(process.execPath, [CLI, ...args], { cwd, encoding: 'utf8', timeout: 90_000, env });
      return { status: r.status, stdout: r.stdout, stderr: r.stderr };
    },
    spawn: (...args) => spawn(process.execPath, [CLI, ...args], { cwd, env, stdio: ['ignore', 'ignore', 'pipe'] }),
    logsDir: join(state, 'genaicode-docker', 'logs'),
  };
}

export function records(state: string): Job[] {
  const dir = join(state, 'genaicode-docker', 'logs', 'jobs');
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((f) => /^j[0-9a-f]{6}\.json$/.test(f))
    .flatMap((f) => {
      try {
        return [JSON.parse(readFileSync(join(dir, f), 'utf8')) as Job];
      } catch {
        return []; // a record a test broke on purpose
      }
    });
}

export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

export async function containerThere(name: string): Promise<boolean> {
  return (await listManaged()).some((c) => c.name === name && c.status !== 'removing');
}

export function start(
  cli: ReturnType<typeof cliWith>,
  command: string,
  ...options: string[]
): { id: string; container: string; logPath: string; pid: number } {
  const started = Date.now();
  const r = cli.run('run', '--background', '--json', ...options, '--', command);
  expect(r.stderr).toBe('');
  expect(r.status).toBe(0);
  // Returns once the container runs, not when the command ends (a bound proving nothing waits for it).
  expect(Date.now() - started).toBeLessThan(60_000);
  return JSON.parse(r.stdout) as { id: string; container: string; logPath: string; pid: number };
}

export type Row = { id: string; state: string; command: string; image?: string; container?: { name: string } };
export const rows = (cli: ReturnType<typeof cliWith>, ...args: string[]) => JSON.parse(cli.run('ps', '--json', ...args).stdout) as Row[];
