// Shared helpers of the benchmark suite: statistics, interleaving, the docker CLI, RSS sampling.
import { execFile, spawn } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, rmSync } from 'node:fs';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';

export const MINIMAL_IMAGE = 'genaicode-docker/sandbox-minimal:latest';
export const PYTHON_IMAGE = 'genaicode-docker/sandbox-python:latest';
export const MiB = 1024 * 1024;

export const now = () => performance.now();

export function quantile(values, q) {
  if (values.length === 0) return NaN;
  const s = [...values].sort((a, b) => a - b);
  const pos = (s.length - 1) * q;
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  return s[lo] + (s[hi] - s[lo]) * (pos - lo);
}
export const median = (v) => quantile(v, 0.5);
export const p90 = (v) => quantile(v, 0.9);

export function fmtMs(ms) {
  if (!Number.isFinite(ms)) return 'n/a';
  return ms >= 1000 ? `${(ms / 1000).toFixed(2)} s` : `${ms.toFixed(1)} ms`;
}
export const fmtRatio = (r) => (Number.isFinite(r) ? `${r.toFixed(2)}x` : 'n/a');

/**
 * Runs the named variants side by side: `warmup` untimed rounds, then `rounds` timed rounds.
 * Every round runs each variant once; the order rotates every round (A B C, B C A, C A B, ...)
 * so no variant always runs first (on a cold cache) or last. `variants` maps a name to an
 * async function returning optional details; `before` and `between` run untimed before and
 * after every call (set-up, clean-up, checks).
 */
export async function interleave(variants, { rounds, warmup = 0, before, between, onRound } = {}) {
  const names = Object.keys(variants);
  const times = Object.fromEntries(names.map((n) => [n, []]));
  const details = Object.fromEntries(names.map((n) => [n, []]));
  for (let r = -warmup; r < rounds; r++) {
    const k = ((r % names.length) + names.length) % names.length;
    const order = [...names.slice(k), ...names.slice(0, k)];
    for (const name of order) {
      if (before) await before(name);
      const t0 = now();
      const detail = await variants[name]();
      const dt = now() - t0;
      if (r >= 0) {
        times[name].push(dt);
        details[name].push(detail);
      }
      if (between) await between(name, detail);
    }
    if (onRound) onRound(r);
  }
  return { times, details };
}

export function summarize(times) {
  return { n: times.length, median: median(times), p90: p90(times), min: Math.min(...times), max: Math.max(...times) };
}

/** Runs the docker CLI, returning { code, stdout, stderr }; never throws on a non-zero exit. */
export function docker(args, { timeoutMs = 120_000 } = {}) {
  return new Promise((resolve, reject) => {
    execFile('docker', args, { timeout: timeoutMs, maxBuffer: 16 * MiB, encoding: 'utf8' }, (error, stdout, stderr) => {
      if (error && error.code === 'ENOENT') return reject(new Error('the docker CLI is not installed'));
      resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout, stderr });
    });
  });
}

/** Like `docker`, but throws when the CLI fails. */
export async function dockerOk(args, options) {
  const r = await docker(args, options);
  if (r.code !== 0) throw new Error(`docker ${args.join(' ')} failed (${r.code}): ${r.stderr.trim()}`);
  return r.stdout;
}

/** `docker ARGS > file`: the CLI's stdout goes straight to a file, as a shell redirect would. */
export function dockerToFile(args, file, wrapper = []) {
  return new Promise((resolve, reject) => {
    const fd = openSync(file, 'w');
    const argv = [...wrapper, 'docker', ...args];
    const child = spawn(argv[0], argv.slice(1), { stdio: ['ignore', fd, 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', (e) => {
      closeSync(fd);
      reject(e);
    });
    child.on('close', (code) => {
      closeSync(fd);
      if (code === 0) resolve();
      else reject(new Error(`docker ${args.join(' ')} exited ${code}: ${stderr.trim()}`));
    });
  });
}

/** Samples this process's RSS every `everyMs` until stopped; `growth` = peak - baseline. */
export function rssSampler(everyMs = 50) {
  const baseline = process.memoryUsage().rss;
  let peak = baseline;
  let samples = 1;
  const timer = setInterval(() => {
    samples++;
    const rss = process.memoryUsage().rss;
    if (rss > peak) peak = rss;
  }, everyMs);
  return {
    stop() {
      clearInterval(timer);
      const rss = process.memoryUsage().rss;
      if (rss > peak) peak = rss;
      return { baseline, peak, growth: peak - baseline, samples };
    },
  };
}

export function tempDir(prefix = 'genaicode-bench-') {
  return mkdtempSync(join(tmpdir(), prefix));
}

export function rmQuiet(path) {
  try {
    rmSync(path, { recursive: true, force: true });
  } catch {
    // best effort
  }
}

export function loadAvg() {
  return loadavg()
    .map((x) => x.toFixed(2))
    .join(' ');
}

export const cpuCount = () => availableParallelism();
