#!/usr/bin/env node
// Under load: 16 sandboxes side by side, 100 commands each (a third `true`, a third 1 MB of
// output, a third failing), against the `docker exec` CLI running the same commands in 16
// containers with the same concurrency. Both sides run in alternating halves, so machine
// noise falls on both. Prints failed or lost commands, whether every log is complete, and
// latency percentiles with the p95 ratio (target: ours / CLI <= 1.0x).
//
//   --quick   4 sandboxes x 20 commands (a smoke run)
import { mkdtempSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const { SandboxManager } = await import('../dist/index.js');
const L = await import('./lib.mjs');
const { benchEngine } = await import('./bench-engine.mjs');
const { MINIMAL_IMAGE, docker, dockerOk, fmtMs, fmtRatio, loadAvg, now, quantile, rmQuiet } = L;

const QUICK = process.argv.includes('--quick');
const SANDBOXES = QUICK ? 4 : 16;
const COMMANDS = QUICK ? 20 : 100;
const MIB = 1024 * 1024;
const MIX = [
  { name: 'true', cmd: 'true', exitCode: 0, bytes: 0 },
  { name: '1 MB', cmd: "head -c 1048576 /dev/zero | tr '\\0' x", exitCode: 0, bytes: MIB },
  { name: 'failing', cmd: 'echo failing >&2; exit 3', exitCode: 3, bytes: 8 },
];

const tmp = mkdtempSync(join(tmpdir(), 'gcd-load-'));
const { config } = benchEngine(tmp);
const manager = new SandboxManager({ config, sweepOnStart: false });

/** One side's record: latencies, and the commands that failed or whose output was not all there. */
const fresh = () => ({ latencies: [], failed: [], incompleteLogs: 0, answered: 0 });
const ours = fresh();
const cli = fresh();

async function runOurs(sandboxes, from, to) {
  await Promise.all(
    sandboxes.map(async (sb, s) => {
      for (let i = from; i < to; i++) {
        const m = MIX[i % MIX.length];
        const t0 = now();
        try {
          const r = await sb.exec(m.cmd, { timeoutMs: 60_000 });
          ours.latencies.push(now() - t0);
          ours.answered++;
          const bytes = r.bytes.stdout + r.bytes.stderr;
          if (r.exitCode !== m.exitCode || bytes !== m.bytes)
            ours.failed.push(`sandbox ${s} #${i} ${m.name}: exit ${r.exitCode}, ${bytes} bytes`);
          if (statSync(r.logPath).size !== m.bytes) ours.incompleteLogs++;
          rmQuiet(r.logPath);
          rmQuiet(r.logPath.replace(/\.log$/, '.json'));
        } catch (e) {
          ours.failed.push(`sandbox ${s} #${i} ${m.name}: ${e.code ?? ''} ${e.message}`);
        }
      }
    }),
  );
}

async function runCli(containers, from, to) {
  await Promise.all(
    containers.map(async (id, s) => {
      for (let i = from; i < to; i++) {
        const m = MIX[i % MIX.length];
        const t0 = now();
        const r = await docker(['exec', id, 'sh', '-c', m.cmd], { timeoutMs: 60_000 });
        cli.latencies.push(now() - t0);
        cli.answered++;
        const bytes = Buffer.byteLength(r.stdout) + Buffer.byteLength(r.stderr);
        if (r.code !== m.exitCode || bytes !== m.bytes) cli.failed.push(`container ${s} #${i} ${m.name}: exit ${r.code}, ${bytes} bytes`);
      }
    }),
  );
}

console.log(`# Under load: ${SANDBOXES} sandboxes x ${COMMANDS} commands (true / 1 MB output / failing), ours vs the docker exec CLI`);
console.log(`load before: ${loadAvg()}`);
const sandboxes = [];
const containers = [];
try {
  for (let s = 0; s < SANDBOXES; s++) sandboxes.push(await manager.start());
  for (let s = 0; s < SANDBOXES; s++) {
    containers.push((await dockerOk(['run', '-d', '--rm', '--network', 'none', '--init', MINIMAL_IMAGE, 'sleep', '3600'])).trim());
  }
  const half = Math.floor(COMMANDS / 2);
  await runOurs(sandboxes, 0, half);
  await runCli(containers, 0, half);
  await runOurs(sandboxes, half, COMMANDS);
  await runCli(containers, half, COMMANDS);
} finally {
  await manager.stopAll();
  if (containers.length) await docker(['rm', '-f', ...containers]);
  rmQuiet(tmp);
}

const expected = SANDBOXES * COMMANDS;
const p = (side, q) => quantile(side.latencies, q);
const ratio = p(ours, 0.95) / p(cli, 0.95);
const rows = [
  ['commands answered (of ' + expected + ')', `${ours.answered}`, `${cli.answered}`],
  ['failed or wrong', `${ours.failed.length}`, `${cli.failed.length}`],
  ['logs complete', `${expected - ours.incompleteLogs - (expected - ours.answered)} of ${expected}`, '(none kept)'],
  ['p50 latency', fmtMs(p(ours, 0.5)), fmtMs(p(cli, 0.5))],
  ['p95 latency', fmtMs(p(ours, 0.95)), fmtMs(p(cli, 0.95))],
];
console.log('\n| under load | ours | docker exec CLI |\n|---|---|---|');
for (const r of rows) console.log(`| ${r.join(' | ')} |`);
for (const f of [...ours.failed, ...cli.failed].slice(0, 10)) console.log(`  ${f}`);
const pass = ours.failed.length === 0 && ours.answered === expected && ours.incompleteLogs === 0 && ratio <= 1.0;
console.log(
  `\n${pass ? 'PASS' : 'FAIL'} 6. under load, ${SANDBOXES} x ${COMMANDS}: 0 failed or lost, every log complete, p95 ours / CLI ${fmtRatio(ratio)} (${fmtMs(p(ours, 0.95))} vs ${fmtMs(p(cli, 0.95))}) (limit <= 1.00x)`,
);
console.log(`load after: ${loadAvg()}`);
