#!/usr/bin/env node
// codeExecute (seed 003): the same Python snippet, side by side and interleaved in one run,
//   - through a kept-alive CodeExecutor (the default: docker exec into one container),
//   - through a one-shot CodeExecutor (a fresh container per call, removed at its end),
//   - with the docker CLI: `docker exec C python3 -c '<same>'` into a container like ours.
// Targets: keep-alive / one-shot <= 0.3x (the seed expects ~100 ms vs 2-5 s);
//          keep-alive / docker exec CLI <= 1.0x.
//
//   --quick   fewer rounds (a smoke run)
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const { SandboxManager, CodeExecutor } = await import('../dist/index.js');
const L = await import('./lib.mjs');
const { benchEngine } = await import('./bench-engine.mjs');
const { PYTHON_IMAGE, docker, dockerOk, fmtMs, fmtRatio, interleave, loadAvg, median, p90, rmQuiet } = L;

const QUICK = process.argv.includes('--quick');
const ROUNDS = QUICK ? 8 : 30;
const SNIPPET = 'import json, math\nprint(json.dumps({"pi": round(math.pi, 5), "sum": sum(range(1000))}))';
const EXPECTED = '{"pi": 3.14159, "sum": 499500}\n';
/** The code sandbox's profile, for the CLI's containers: the same image, limits and isolation. */
const PROFILE = ['--init', '--read-only', '--tmpfs', '/tmp:size=64m', '--memory', '256m', '--cpus', '1', '--network', 'none'];

const tmp = mkdtempSync(join(tmpdir(), 'gcd-code-bench-'));
const kept = benchEngine(tmp);
const once = benchEngine(tmp, { codeExecute: { keepAlive: false } });
const keptManager = new SandboxManager({ config: kept.config, sweepOnStart: false });
const onceManager = new SandboxManager({ config: once.config, sweepOnStart: false });
const keepAlive = new CodeExecutor({ manager: keptManager });
const oneShot = new CodeExecutor({ manager: onceManager });

console.log(`# codeExecute: keep-alive vs one-shot vs the docker CLI, ${ROUNDS} rounds (load ${loadAvg()})`);
let cli;
let failures = 0;
try {
  // The CLI's container: the same image and profile (read-only root, 256 MiB, 1 CPU, no network).
  cli = (await dockerOk(['run', '-d', '--rm', ...PROFILE, PYTHON_IMAGE, 'sleep', '3600'])).trim();
  const check = (out) => {
    if (out !== EXPECTED) failures++;
  };
  const { times } = await interleave(
    {
      'keep-alive': async () => check((await keepAlive.execute({ language: 'python', code: SNIPPET })).result.stdout),
      'one-shot': async () => check((await oneShot.execute({ language: 'python', code: SNIPPET })).result.stdout),
      'docker exec CLI': async () => check((await docker(['exec', cli, 'python3', '-c', SNIPPET])).stdout),
      // The seed's one-shot: `docker run --rm` of the snippet (reference).
      'docker run --rm CLI': async () => check((await docker(['run', '--rm', ...PROFILE, PYTHON_IMAGE, 'python3', '-c', SNIPPET])).stdout),
    },
    { rounds: ROUNDS, warmup: 2 },
  );
  console.log('\n| variant | median | p90 |\n|---|---|---|');
  for (const [name, t] of Object.entries(times)) console.log(`| ${name} | ${fmtMs(median(t))} | ${fmtMs(p90(t))} |`);
  const k = median(times['keep-alive']);
  const o = median(times['one-shot']);
  const c = median(times['docker exec CLI']);
  const r1 = k / o;
  const r2 = k / c;
  const run = median(times['docker run --rm CLI']);
  console.log(`\nwrong outputs: ${failures}`);
  console.log(
    `${r1 <= 0.3 && failures === 0 ? 'PASS' : 'FAIL'} 7. codeExecute keep-alive / one-shot: ${fmtRatio(r1)} (${fmtMs(k)} vs ${fmtMs(o)}) (limit <= 0.30x)`,
  );
  console.log(
    `${r2 <= 1.0 && failures === 0 ? 'PASS' : 'FAIL'} 7. codeExecute keep-alive / docker exec python3 -c CLI: ${fmtRatio(r2)} (${fmtMs(k)} vs ${fmtMs(c)}) (limit <= 1.00x)`,
  );
  console.log(
    `(reference) 7. codeExecute one-shot / docker run --rm CLI: ${fmtRatio(o / run)} (${fmtMs(o)} vs ${fmtMs(run)}); keep-alive / docker run --rm: ${fmtRatio(k / run)}`,
  );
} finally {
  await keepAlive.shutdown();
  await keptManager.stopAll();
  await onceManager.stopAll();
  if (cli) await docker(['rm', '-f', cli]);
  rmQuiet(tmp);
}
console.log(`load after: ${loadAvg()}`);
