#!/usr/bin/env node
// Other engines, side by side and interleaved in one run, each against its own CLI:
//   - the remote engine: a second dockerd on loopback over TLS (scripts/engine/second-engine.sh),
//     reached through DOCKER_HOST=tcp://..., DOCKER_TLS_VERIFY and DOCKER_CERT_PATH, vs the
//     `docker` CLI pointed at it the same way;
//   - Podman's Docker API (scripts/engine/podman.sh) vs the `podman` CLI.
// For each: start to ready (`manager.start()` until it resolves vs `run -d --network none IMG
// sleep 3600` until it returns; removal not timed) and a command's round trip in a warm
// container (`sandbox.exec('true')` vs `exec C true`). Targets: each median ratio <= 1.0x.
// Both engines are started by the project's scripts (idempotent; they stay up afterwards).
//
//   --quick        fewer rounds (a smoke run)
//   --only=tls     or --only=podman: one engine
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const { DockerEngine, SandboxManager, loadConfig } = await import('../dist/index.js');
const { fmtMs, fmtRatio, interleave, loadAvg, median, p90, rmQuiet, tempDir, MINIMAL_IMAGE } = await import('./lib.mjs');

const QUICK = process.argv.includes('--quick');
const ROUNDS = QUICK ? 5 : 15;
const WARMUP = 2;
const ONLY = process.argv.find((a) => a.startsWith('--only='))?.slice('--only='.length);
const ROOT = join(fileURLToPath(import.meta.url), '..', '..');

function run(file, args, env = process.env) {
  return new Promise((resolve) => {
    execFile(file, args, { env, timeout: 300_000, maxBuffer: 16 * 1024 * 1024, encoding: 'utf8' }, (error, stdout, stderr) =>
      resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout, stderr }),
    );
  });
}
async function ok(file, args, env) {
  const r = await run(file, args, env);
  if (r.code !== 0) throw new Error(`${file} ${args.join(' ')} failed (${r.code}): ${r.stderr.trim()}`);
  return r.stdout;
}

/** Starts an engine with the project's script; returns the environment it printed. */
async function startEngine(script) {
  const out = await ok('bash', [join(ROOT, 'scripts', 'engine', script), 'start']);
  const env = {};
  for (const m of out.matchAll(/^export (\w+)=(.*)$/gm)) env[m[1]] = m[2];
  return env;
}

const engines = [
  {
    name: 'remote TLS engine',
    key: 'tls',
    script: 'second-engine.sh',
    cli: (env) => ({ file: 'docker', env: { ...process.env, ...env } }),
  },
  {
    name: 'Podman',
    key: 'podman',
    script: 'podman.sh',
    // The podman CLI reads its settings from the same containers.conf as the service.
    cli: () => ({ file: 'podman', env: { ...process.env, CONTAINERS_CONF: '/var/lib/genaicode-docker-podman/containers.conf' } }),
  },
].filter((e) => !ONLY || e.key === ONLY);

const tmp = tempDir('gcd-engines-bench-');
const results = [];
console.log(`load average at start: ${loadAvg()}`);
try {
  for (const e of engines) {
    const env = await startEngine(e.script);
    const cli = e.cli(env);
    const engine = new DockerEngine({}, env);
    const config = loadConfig({ cwd: tmp, env: {}, overrides: { logs: { dir: join(tmp, 'logs') }, images: { default: MINIMAL_IMAGE } } });
    const manager = new SandboxManager({ config, engine, sweepOnStart: false });
    const info = await engine.info();
    console.log(`\n## ${e.name}: ${info.kind} ${info.version} (API ${info.apiVersion}) at ${info.endpoint}, vs the ${cli.file} CLI`);
    try {
      // Start to ready.
      const made = [];
      const start = await interleave(
        {
          ours: async () => made.push({ sandbox: await manager.start() }),
          cli: async () =>
            made.push({ id: (await ok(cli.file, ['run', '-d', '--network', 'none', MINIMAL_IMAGE, 'sleep', '3600'], cli.env)).trim() }),
        },
        {
          rounds: ROUNDS,
          warmup: WARMUP,
          between: async () => {
            for (const m of made.splice(0)) {
              if (m.sandbox) await m.sandbox.stop();
              else await run(cli.file, ['rm', '-f', m.id], cli.env);
            }
          },
        },
      );
      // A command's round trip in a warm container of each.
      const sandbox = await manager.start();
      const warm = (await ok(cli.file, ['run', '-d', '--network', 'none', MINIMAL_IMAGE, 'sleep', '3600'], cli.env)).trim();
      let exec;
      try {
        exec = await interleave(
          {
            ours: async () => {
              const r = await sandbox.exec('true');
              if (r.exitCode !== 0) throw new Error(`exec true: exit ${r.exitCode}`);
            },
            cli: () => ok(cli.file, ['exec', warm, 'true'], cli.env),
          },
          { rounds: ROUNDS * 2, warmup: WARMUP },
        );
      } finally {
        await sandbox.stop();
        await run(cli.file, ['rm', '-f', warm], cli.env);
      }
      for (const [what, r] of [
        ['start to ready', start],
        ["exec('true')", exec],
      ]) {
        const ratio = median(r.times.ours) / median(r.times.cli);
        console.log(
          `${what.padEnd(15)} ours ${fmtMs(median(r.times.ours))} (p90 ${fmtMs(p90(r.times.ours))})  ${cli.file} CLI ${fmtMs(median(r.times.cli))} (p90 ${fmtMs(p90(r.times.cli))})  ratio ${fmtRatio(ratio)}  ${ratio <= 1 ? 'PASS' : 'FAIL'} (<= 1.0x)`,
        );
        results.push({ engine: e.name, what, ours: median(r.times.ours), cli: median(r.times.cli), ratio });
      }
    } finally {
      await manager[Symbol.asyncDispose]();
    }
  }
} finally {
  rmQuiet(tmp);
}
console.log(`\nload average at end: ${loadAvg()}\n`);
console.log('| engine | what | ours (median) | CLI (median) | ratio |');
console.log('|---|---|---|---|---|');
for (const r of results) console.log(`| ${r.engine} | ${r.what} | ${fmtMs(r.ours)} | ${fmtMs(r.cli)} | ${fmtRatio(r.ratio)} |`);
