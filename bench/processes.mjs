#!/usr/bin/env node
// Background processes (docs/processes.md), side by side in one run:
//   - readProcessOutput of 1 MB of new output (Sandbox.readProcessOutput: the lines since the
//     last read, from the window in memory, capped for the answer) vs reading the same bytes
//     the way `docker logs` would, with `docker exec C cat <file>` of the file the process
//     tee'd them to; alternated, each round on fresh output;
//     target: ours / CLI <= 1.0x;
//   - (reference) the same 1 MB read back from the process's log on disk in this process.
//
//   --quick   fewer rounds (a smoke run)
import { mkdtempSync, openSync, readSync, closeSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const { SandboxManager } = await import('../dist/index.js');
const L = await import('./lib.mjs');
const { benchEngine } = await import('./bench-engine.mjs');
const { MINIMAL_IMAGE, docker, fmtMs, fmtRatio, loadAvg, median, p90, now, rmQuiet } = L;

const QUICK = process.argv.includes('--quick');
const ROUNDS = QUICK ? 5 : 15;
/** 15,625 lines of 64 bytes: 1,000,000 bytes a round. */
const LINES = 15_625;
const BYTES = LINES * 64;

const tmp = mkdtempSync(join(tmpdir(), 'gcd-procs-bench-'));
const { config } = benchEngine(tmp);
const manager = new SandboxManager({ config, sweepOnStart: false });
console.log(`# Background processes (load ${loadAvg()})`);
let pass = true;
try {
  const sb = await manager.start({ image: MINIMAL_IMAGE });
  // Each line of input: 1 MB of numbered lines, on stdout and into /tmp/round.txt.
  const p = await sb.startProcess(
    `while read -r round; do awk -v r="$round" 'BEGIN { for (i = 1; i <= ${LINES}; i++) printf "%063d\\n", r * 100000 + i }' | tee /tmp/round.txt; done`,
  );
  const times = { readProcessOutput: [], 'docker exec cat': [], 'log on disk': [] };
  let expected = 0;
  for (let round = 0; round < ROUNDS + 2; round++) {
    sb.writeProcessInput(p.processId, `${round}\n`);
    expected += LINES;
    for (let i = 0; i < 600 && sb.listProcesses()[0].lines < expected; i++) await new Promise((r) => setTimeout(r, 20));
    // The file the CLI reads is complete too.
    for (let i = 0; i < 100; i++) {
      const size = await docker(['exec', sb.name, 'stat', '-c', '%s', '/tmp/round.txt']);
      if (Number(size.stdout.trim()) === BYTES) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    const ours = async () => {
      const t0 = now();
      const r = sb.readProcessOutput(p.processId);
      const ms = now() - t0;
      if (r.toLine - r.fromLine + 1 !== LINES) throw new Error(`read lines ${r.fromLine}-${r.toLine}, not ${LINES}`);
      return ms;
    };
    const cli = async () => {
      const t0 = now();
      const r = await docker(['exec', sb.name, 'cat', '/tmp/round.txt']);
      const ms = now() - t0;
      if (r.stdout.length !== BYTES) throw new Error(`docker exec cat read ${r.stdout.length} bytes`);
      return ms;
    };
    const disk = () => {
      const t0 = now();
      const size = statSync(p.logPath).size;
      const buf = Buffer.allocUnsafe(BYTES);
      const fd = openSync(p.logPath, 'r');
      readSync(fd, buf, 0, BYTES, size - BYTES);
      closeSync(fd);
      return now() - t0;
    };
    // Alternated: the one that goes first changes every round.
    const a = round % 2 === 0 ? await ours() : undefined;
    const c = await cli();
    const b = a ?? (await ours());
    const d = disk();
    if (round < 2) continue; // warm-up
    times.readProcessOutput.push(b);
    times['docker exec cat'].push(c);
    times['log on disk'].push(d);
  }
  await sb.stopProcess(p.processId);
  console.log('\n| 1 MB of new output | median | p90 |\n|---|---|---|');
  for (const [name, t] of Object.entries(times)) console.log(`| ${name} | ${fmtMs(median(t))} | ${fmtMs(p90(t))} |`);
  const ours = median(times.readProcessOutput);
  const cli = median(times['docker exec cat']);
  const r1 = ours / cli;
  pass &&= r1 <= 1.0;
  console.log(
    `\n${r1 <= 1.0 ? 'PASS' : 'FAIL'} 11. readProcessOutput 1 MB / docker exec cat: ${fmtRatio(r1)} (${fmtMs(ours)} vs ${fmtMs(cli)}) (limit <= 1.00x)`,
  );
  const disk = median(times['log on disk']);
  console.log(
    `(reference) 11. readProcessOutput 1 MB / reading it from the log on disk: ${fmtRatio(ours / disk)} (${fmtMs(ours)} vs ${fmtMs(disk)})`,
  );
} finally {
  await manager.stopAll();
  rmQuiet(tmp);
}
process.exitCode = pass ? 0 : 1;
