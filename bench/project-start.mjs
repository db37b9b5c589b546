#!/usr/bin/env node
// A per-task container with the project mounted (seed 004), side by side and interleaved in
// one run, until it is ready for its first command:
//   - manager.start({ project: 'rw' }): the project writable at /workspace as an overlay
//     (its upper folder made, the engine mounting it), the mounts checked in the container,
//     the host user's ids;
//   - manager.start({ project: 'ro' });
//   - the CLI: `docker run -d -v <project>:/workspace <same image> sleep 3600`.
// Target: rw start / docker run -d -v <= 1.0x (the seed: under 3 s in total; the absolute
// time is printed too). Removal is not timed. Then a command's round trip in the writable
// project (the overlay applied after it) vs the read-only one, reported.
//
//   --quick   fewer rounds (a smoke run)
import { chownSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const { SandboxManager } = await import('../dist/index.js');
const L = await import('./lib.mjs');
const { benchEngine } = await import('./bench-engine.mjs');
const { docker, dockerOk, fmtMs, fmtRatio, interleave, loadAvg, median, p90, rmQuiet, tempDir } = L;

const QUICK = process.argv.includes('--quick');
const ROUNDS = QUICK ? 5 : 15;
const IMAGE = process.env.BENCH_PROJECT_IMAGE ?? 'genaicode-docker/python:latest';

const tmp = tempDir('gcd-project-bench-');
const project = join(tmp, 'project');
// A small project as a GenAIcode user has one: .genaicoderc, a git folder, some sources.
mkdirSync(join(project, '.git', 'hooks'), { recursive: true });
writeFileSync(join(project, '.genaicoderc'), '{"rootDir":"."}');
writeFileSync(join(project, '.git', 'HEAD'), 'ref: refs/heads/main\n');
for (let d = 0; d < 10; d++) {
  mkdirSync(join(project, `pkg${d}`));
  for (let f = 0; f < 20; f++) writeFileSync(join(project, `pkg${d}`, `m${f}.py`), `def f${f}():\n    return ${f}\n`);
}
// As root, the project belongs to a developer: a writable mount never runs as root.
if (process.getuid?.() === 0) {
  const chownTree = (dir) => {
    chownSync(dir, 1000, 1000);
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const p = join(dir, e.name);
      if (e.isDirectory()) chownTree(p);
      else chownSync(p, 1000, 1000);
    }
  };
  chownTree(project);
}

const { config } = benchEngine(project, { project: { mount: 'rw' }, logs: { dir: join(tmp, 'logs') } });
const manager = new SandboxManager({ config, sweepOnStart: false });
const started = [];
const cli = [];

console.log(`# per-task container with the project mounted, ready for its first command: ${IMAGE}, ${ROUNDS} rounds (load ${loadAvg()})`);
try {
  await dockerOk(['image', 'inspect', IMAGE]).catch(() => {
    console.error(`${IMAGE} is not present: build it with \`bash docker/build-offline.sh python\` (or set BENCH_PROJECT_IMAGE).`);
    process.exit(2);
  });
  const { times } = await interleave(
    {
      "manager.start({ project: 'rw' })": async () => started.push(await manager.start({ image: IMAGE, project: 'rw' })),
      "manager.start({ project: 'ro' })": async () => started.push(await manager.start({ image: IMAGE, project: 'ro' })),
      'docker run -d -v': async () => {
        const r = await docker(['run', '-d', '-v', `${project}:/workspace`, IMAGE, 'sleep', '3600']);
        if (r.code !== 0) throw new Error(`docker run failed: ${r.stderr}`);
        cli.push(r.stdout.trim());
      },
    },
    {
      rounds: ROUNDS,
      warmup: 1,
      between: async (name) => {
        if (name.startsWith('manager')) await started.pop()?.stop();
        else await docker(['rm', '-f', cli.pop()]);
      },
    },
  );
  console.log('\n| variant | median | p90 |\n|---|---|---|');
  for (const [name, t] of Object.entries(times)) console.log(`| ${name} | ${fmtMs(median(t))} | ${fmtMs(p90(t))} |`);
  const rw = median(times["manager.start({ project: 'rw' })"]);
  const ro = median(times["manager.start({ project: 'ro' })"]);
  const run = median(times['docker run -d -v']);
  console.log(
    `\n${rw / run <= 1.0 && rw < 3000 ? 'PASS' : 'FAIL'} 9. project container start (rw) / docker run -d -v: ${fmtRatio(rw / run)} (${fmtMs(rw)} vs ${fmtMs(run)}; seed: under 3 s) (limit <= 1.00x)`,
  );
  console.log(`(reference) 9. project container start (ro) / docker run -d -v: ${fmtRatio(ro / run)} (${fmtMs(ro)} vs ${fmtMs(run)})`);

  // A command's round trip in a writable project (its overlay applied after it) vs a
  // read-only one: the same reading command, and a command that writes two files in rw.
  const rwBox = await manager.start({ image: IMAGE, project: 'rw' });
  const roBox = await manager.start({ image: IMAGE, project: 'ro' });
  let n = 0;
  const exec = async (box, cmd) => {
    const r = await box.exec(cmd);
    if (r.exitCode !== 0) throw new Error(`${cmd}: exit ${r.exitCode}: ${r.stderr}`);
  };
  const { times: cmdTimes } = await interleave(
    {
      'rw: cat a file': () => exec(rwBox, 'cat pkg0/m0.py'),
      'ro: cat a file': () => exec(roBox, 'cat pkg0/m0.py'),
      'rw: write two files (applied)': () => exec(rwBox, `echo ${++n} > out.txt; mkdir -p build && echo ${n} > build/o.txt`),
    },
    { rounds: ROUNDS * 2, warmup: 2 },
  );
  console.log('\n| command round trip | median | p90 |\n|---|---|---|');
  for (const [name, t] of Object.entries(cmdTimes)) console.log(`| ${name} | ${fmtMs(median(t))} | ${fmtMs(p90(t))} |`);
  const rwCat = median(cmdTimes['rw: cat a file']);
  const roCat = median(cmdTimes['ro: cat a file']);
  const rwWrite = median(cmdTimes['rw: write two files (applied)']);
  console.log(
    `(report) command round trip rw / ro: ${fmtRatio(rwCat / roCat)} (${fmtMs(rwCat)} vs ${fmtMs(roCat)}); with two files applied: ${fmtRatio(rwWrite / roCat)} (${fmtMs(rwWrite)})`,
  );
} finally {
  await manager.stopAll();
  for (const id of cli) await docker(['rm', '-f', id]);
  rmQuiet(tmp);
}
console.log(`load after: ${loadAvg()}`);
