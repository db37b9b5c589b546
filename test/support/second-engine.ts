/**
 * The second Docker engine (scripts/engine/second-engine.sh): a dockerd on loopback over TLS
 * that stands in for a remote engine. Started by the project's own script (idempotent): a
 * test that needs it fails, never skips, when it cannot start.
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { ROOT } from './built-package.js';
import type { DockerCliResult } from './engine.js';

export const SECOND_ENGINE_SCRIPT = join(ROOT, 'scripts', 'engine', 'second-engine.sh');

export interface SecondEngine {
  /** DOCKER_HOST, DOCKER_TLS_VERIFY and DOCKER_CERT_PATH that point a client at it. */
  env: Record<'DOCKER_HOST' | 'DOCKER_TLS_VERIFY' | 'DOCKER_CERT_PATH', string>;
  /** The docker CLI pointed at it (by its environment, so nothing of the caller's leaks in). */
  cli(args: string[]): Promise<DockerCliResult>;
}

function run(file: string, args: string[], env: NodeJS.ProcessEnv, timeoutMs: number): Promise<DockerCliResult> {
  return new Promise((resolve) => {
    execFile(file, args, { env, timeout: timeoutMs, maxBuffer: 16 * 1024 * 1024, encoding: 'utf8' }, (error, stdout, stderr) => {
      resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout, stderr });
    });
  });
}

/** Starts it (or finds it running) and returns how to reach it; throws with the script's words when it cannot. */
export async function startSecondEngine(): Promise<SecondEngine> {
  const r = await run('bash', [SECOND_ENGINE_SCRIPT, 'start'], process.env, 240_000);
  if (r.code !== 0) {
    throw new Error(`The second engine did not start (bash ${SECOND_ENGINE_SCRIPT} start, exit ${r.code}): ${r.stderr.trim()}`);
  }
  const env: Record<string, string> = {};
  for (const m of r.stdout.matchAll(/^export (DOCKER_HOST|DOCKER_TLS_VERIFY|DOCKER_CERT_PATH)=(.*)$/gm)) env[m[1]!] = m[2]!;
  if (!env.DOCKER_HOST || !env.DOCKER_CERT_PATH) throw new Error(`The second engine's script printed no environment: ${r.stdout}`);
  const full = env as SecondEngine['env'];
  return { env: full, cli: (args) => run('docker', args, { ...process.env, ...full }, 60_000) };
}
