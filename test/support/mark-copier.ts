/**
 * Commands that copy another exec's mark (GENAICODE_DOCKER_EXEC) from /proc into a daemon of
 * their own, and the look at the container's processes that says whether the daemon survived
 * (test/integration/commands/forged-marks.test.ts, and the same on Kubernetes).
 */
import type { Sandbox } from '../../src/index.js';

/**
 * Shell text that sets $m to the mark in the environment of the first process whose command
 * line starts with $1 (never this command's own processes, which have no such command line).
 */
const MARK_OF = [
  'mark_of() {',
  '  for d in /proc/[0-9]*; do',
  '    c=$(tr "\\0" " " < "$d/cmdline" 2>/dev/null) || continue',
  '    case "$c" in "$1"*) m=$(tr "\\0" "\\n" < "$d/environ" | grep "^GENAICODE_DOCKER_EXEC="); [ -n "$m" ] && return 0 ;; esac',
  '  done',
  '  return 1',
  '}',
].join('\n');

/**
 * A command that copies the mark of the process whose command line starts with `victim` into
 * a daemon running `daemon` (setsid and a double fork: its parent is init, its session its
 * own), says which mark it copied, then waits to be killed.
 */
export function copier(victim: string, daemon: string, prelude = ''): string {
  return [
    MARK_OF,
    `mark_of '${victim}' || { echo no-mark; exit 3; }`,
    prelude,
    `(setsid env "$m" ${daemon} < /dev/null > /dev/null 2>&1 &)`,
    'echo "copied $m"',
    'sleep 1000',
  ].join('\n');
}

/**
 * The pids and command lines of the container's `sleep` processes (builtins and tr: busybox
 * and Debian alike; only these, as the shells' long command lines hold control characters).
 */
export async function processes(sb: Sandbox): Promise<Array<{ pid: number; args: string }>> {
  const r = await sb.exec([
    '/bin/sh',
    '-c',
    'for d in /proc/[0-9]*; do c=$(tr "\\0" " " < "$d/cmdline" 2>/dev/null) && case "$c" in "sleep "*) echo "${d#/proc/} $c" ;; esac; done',
  ]);
  expect(r.exitCode).toBe(0);
  return r.stdout
    .split('\n')
    .filter((l) => l.trim())
    .map((l) => ({ pid: Number(l.slice(0, l.indexOf(' '))), args: l.slice(l.indexOf(' ') + 1).trim() }));
}

/** Waits until a process whose command line is `args` runs; returns its environment's mark. */
export async function waitForProcess(sb: Sandbox, args: string): Promise<string> {
  for (let i = 0; i < 100; i++) {
    const p = (await processes(sb)).find((x) => x.args === args);
    if (p) {
      const env = await sb.exec(['/bin/sh', '-c', `tr '\\0' '\\n' < /proc/${p.pid}/environ | grep ^GENAICODE_DOCKER_EXEC= || true`]);
      return env.stdout.trim();
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${args} did not start`);
}

export async function running(sb: Sandbox, args: string): Promise<boolean> {
  return (await processes(sb)).some((p) => p.args === args);
}
