#!/usr/bin/env node
// Files inside the container (seed 002), side by side in one run:
//   - writeContainerFile of 10 MB (Sandbox.writeFile: through the engine's archive API, then
//     moved into place and checked in the container) vs `docker cp` of the same file with the
//     CLI, interleaved;
//     target: ours / CLI <= 1.0x;
//   - readContainerFile of a 1 MB range of lines from a 1 GiB file: this process's RSS
//     growth; target <= 16 MiB.
//
//   --quick   fewer rounds (a smoke run)
import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const { SandboxManager } = await import('../dist/index.js');
const L = await import('./lib.mjs');
const { benchEngine } = await import('./bench-engine.mjs');
const { MINIMAL_IMAGE, MiB, docker, fmtMs, fmtRatio, interleave, loadAvg, median, p90, rmQuiet, rssSampler } = L;

const QUICK = process.argv.includes('--quick');
const ROUNDS = QUICK ? 5 : 15;
setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc');

const tmp = mkdtempSync(join(tmpdir(), 'gcd-files-bench-'));
const { config } = benchEngine(tmp);
const manager = new SandboxManager({ config, sweepOnStart: false });
console.log(`# Files inside the container (load ${loadAvg()})`);
let pass = true;
try {
  const sb = await manager.start({ image: MINIMAL_IMAGE });
  const data = randomBytes(10 * MiB);
  const hostFile = join(tmp, 'ten.bin');
  writeFileSync(hostFile, data);
  const { times } = await interleave(
    {
      writeContainerFile: async () => {
        const r = await sb.writeFile('bench/ten.bin', data);
        if (r.bytesWritten !== data.length) throw new Error(`wrote ${r.bytesWritten} bytes`);
      },
      'docker cp': async () => {
        const r = await docker(['cp', hostFile, `${sb.name}:/workspace/bench/ten-cli.bin`]);
        if (r.code !== 0) throw new Error(`docker cp failed: ${r.stderr}`);
      },
    },
    { rounds: ROUNDS, warmup: 2 },
  );
  console.log('\n| 10 MB into the container | median | p90 |\n|---|---|---|');
  for (const [name, t] of Object.entries(times)) console.log(`| ${name} | ${fmtMs(median(t))} | ${fmtMs(p90(t))} |`);
  const ours = median(times.writeContainerFile);
  const cli = median(times['docker cp']);
  const r1 = ours / cli;
  pass &&= r1 <= 1.0;
  console.log(
    `\n${r1 <= 1.0 ? 'PASS' : 'FAIL'} 8. writeContainerFile 10 MB / docker cp: ${fmtRatio(r1)} (${fmtMs(ours)} vs ${fmtMs(cli)}) (limit <= 1.00x)`,
  );
  // Reference: 1 MB, where the fixed costs (a lookup, an extraction, a move; the CLI's start) dominate.
  const small = randomBytes(MiB);
  const smallFile = join(tmp, 'one.bin');
  writeFileSync(smallFile, small);
  const ref = await interleave(
    {
      writeContainerFile: async () => sb.writeFile('bench/one.bin', small),
      'docker cp': async () => docker(['cp', smallFile, `${sb.name}:/workspace/bench/one-cli.bin`]),
    },
    { rounds: ROUNDS, warmup: 1 },
  );
  const o1 = median(ref.times.writeContainerFile);
  const c1 = median(ref.times['docker cp']);
  console.log(`(reference) 8. writeContainerFile 1 MB / docker cp: ${fmtRatio(o1 / c1)} (${fmtMs(o1)} vs ${fmtMs(c1)})`);

  // A 1 GiB file of 64-byte numbered lines, made in the container; then 1 MB of its lines from its middle.
  const make = await sb.exec(
    `awk 'BEGIN { for (i = 1; i <= 16777216; i++) printf "%063d\\n", i }' > /workspace/bench/big.txt && wc -c < /workspace/bench/big.txt`,
    {
      timeoutMs: 600_000,
    },
  );
  if (make.exitCode !== 0) throw new Error(`making the 1 GiB file failed: ${make.stderr}`);
  const first = 8_000_000;
  const lines = 16_384; // 16,384 x 64 bytes = 1 MiB
  gc();
  const rss = rssSampler(20);
  const t0 = performance.now();
  const read = await sb.readFile('bench/big.txt', { startLine: first, endLine: first + lines - 1, maxBytes: 1024 * 1024, maxLines: lines });
  const took = performance.now() - t0;
  const mem = rss.stop();
  const ok = read.startLine === first && read.endLine === first + lines - 1 && read.text.startsWith(String(first).padStart(63, '0'));
  const growthMiB = mem.growth / MiB;
  pass &&= ok && growthMiB <= 16;
  console.log(
    `${ok && growthMiB <= 16 ? 'PASS' : 'FAIL'} 8. readContainerFile of 1 MiB of lines (${first}-${first + lines - 1}) from a ${make.stdout.trim()}-byte file: RSS growth ${growthMiB.toFixed(1)} MiB in ${fmtMs(took)} (limit <= 16 MiB)`,
  );
} finally {
  await manager.stopAll();
  rmQuiet(tmp);
}
console.log(`load after: ${loadAvg()}`);
// Like the other benchmarks: exit 0 once the run completes, whatever the targets say.
void pass;
