#!/usr/bin/env node
// The kept shell (one long-lived shell per container, exec.keptShell) side by side with the
// one-exec-per-command path, in one run:
//   1. `true` through Sandbox.exec in the kept shell vs `docker exec C true` (the CLI) and vs
//      Sandbox.exec with the kept shell off (today's path), interleaved;
//      targets: kept / docker exec <= 0.1x, kept / one exec <= 0.1x;
//   2. 1 GiB of output through the kept shell vs `docker exec C dd ... > file`, interleaved;
//      targets: throughput ratio >= 0.9x, this process's RSS growth <= 64 MiB;
//   3. a 20-command task through runTask (the inner loop of runContainerTask, a scripted
//      model), wall time, one exec per command vs the kept shell (a report, no target).
//
//   --quick   fewer rounds (a smoke run)
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

const { SandboxManager } = await import('../dist/index.js');
const taskLoop = await import('../dist/task/task-loop.js');
const L = await import('./lib.mjs');
const { benchEngine } = await import('./bench-engine.mjs');
const { MINIMAL_IMAGE, MiB, docker, dockerToFile, fmtMs, fmtRatio, interleave, loadAvg, median, p90, rmQuiet, rssSampler } = L;

const QUICK = process.argv.includes('--quick');
const ROUNDS = QUICK ? 30 : 120;
const OUTPUT_PAIRS = QUICK ? 2 : 4;
const TASK_ROUNDS = QUICK ? 2 : 5;
const OUTPUT_BYTES = 1024 * MiB;
const ZEROS = `dd if=/dev/zero bs=1048576 count=${OUTPUT_BYTES / MiB} 2>/dev/null`;
setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc');

const tmp = L.tempDir('gcd-kept-shell-bench-');
// Every byte of the 1 GiB is teed to its log: the log caps are lifted above it.
const logs = { maxCommandBytes: '2g', maxSessionBytes: '1024g', minFreeBytes: 0 };
const kept = new SandboxManager({ config: benchEngine(tmp, { logs }).config, sweepOnStart: false });
const plain = new SandboxManager({ config: benchEngine(tmp, { logs, exec: { keptShell: false } }).config, sweepOnStart: false });
console.log(`# The kept shell (load ${loadAvg()})`);
const rows = [];
let pass = true;
const target = (name, value, ok, limit) => {
  pass &&= ok;
  rows.push(`| ${name} | ${value} | ${limit} | ${ok ? 'PASS' : '**FAIL**'} |`);
};
const expectOk = (r, what) => {
  if (r.exitCode !== 0) throw new Error(`${what}: exit ${r.exitCode} ${r.stderr}`);
  return r;
};
try {
  // Read-only roots: no writable layer to measure after each command on either side (the
  // disk watch's inspect is the same on both paths and would only add noise).
  const [a, b] = await Promise.all([
    kept.start({ image: MINIMAL_IMAGE, readOnlyRoot: true }),
    plain.start({ image: MINIMAL_IMAGE, readOnlyRoot: true }),
  ]);

  // 1. One command.
  const { times } = await interleave(
    {
      'kept shell': async () => expectOk(await a.exec('true'), 'kept'),
      'docker exec C true': async () => {
        const r = await docker(['exec', a.name, 'true']);
        if (r.code !== 0) throw new Error(`docker exec: ${r.stderr}`);
      },
      'one exec (keptShell off)': async () => expectOk(await b.exec('true'), 'one exec'),
    },
    { rounds: ROUNDS, warmup: 10 },
  );
  console.log('\n| `true` | median | p90 |\n|---|---|---|');
  for (const [name, t] of Object.entries(times)) console.log(`| ${name} | ${fmtMs(median(t))} | ${fmtMs(p90(t))} |`);
  const k = median(times['kept shell']);
  const vsCli = k / median(times['docker exec C true']);
  const vsExec = k / median(times['one exec (keptShell off)']);
  target('`true`: kept shell / docker exec', fmtRatio(vsCli), vsCli <= 0.1, '<= 0.10x');
  target('`true`: kept shell / one exec per command', fmtRatio(vsExec), vsExec <= 0.1, '<= 0.10x');

  // 2. 1 GiB of output.
  const cliFile = `${tmp}/cli-output.bin`;
  let rss = 0;
  const out = await interleave(
    {
      'kept shell': async () => {
        gc();
        const s = rssSampler();
        const r = expectOk(await a.exec(ZEROS, { label: 'gib' }), 'kept 1 GiB');
        rss = Math.max(rss, s.stop().growth);
        if (r.bytes.stdout !== OUTPUT_BYTES) throw new Error(`kept shell: ${r.bytes.stdout} bytes`);
        rmQuiet(r.logPath);
      },
      'docker exec > file': async () => {
        await dockerToFile(['exec', a.name, 'sh', '-c', ZEROS], cliFile);
        rmQuiet(cliFile);
      },
      // The same container: an argument vector takes the one-exec path beside the kept shell.
      'one exec (keptShell off)': async () => {
        const r = expectOk(await a.exec(['sh', '-c', ZEROS], { label: 'gib' }), 'one exec 1 GiB');
        if (r.bytes.stdout !== OUTPUT_BYTES) throw new Error(`one exec: ${r.bytes.stdout} bytes`);
        rmQuiet(r.logPath);
      },
    },
    { rounds: OUTPUT_PAIRS, warmup: 1 },
  );
  console.log('\n| 1 GiB of output | median | p90 | MB/s |\n|---|---|---|---|');
  for (const [name, t] of Object.entries(out.times))
    console.log(`| ${name} | ${fmtMs(median(t))} | ${fmtMs(p90(t))} | ${(OUTPUT_BYTES / 1e6 / (median(t) / 1000)).toFixed(0)} |`);
  const throughput = median(out.times['docker exec > file']) / median(out.times['kept shell']);
  target('1 GiB: kept shell throughput / docker exec > file', fmtRatio(throughput), throughput >= 0.9, '>= 0.90x');
  const vsOne = median(out.times['one exec (keptShell off)']) / median(out.times['kept shell']);
  rows.push(`| 1 GiB: kept shell throughput / one exec per command | ${fmtRatio(vsOne)} | (reference) | - |`);
  target('1 GiB: RSS growth', `${(rss / MiB).toFixed(1)} MiB`, rss <= 64 * MiB, '<= 64 MiB');

  // 3. A 20-command task: what a model's build-and-test loop looks like.
  const commands = [
    'mkdir -p /tmp/app/src',
    'cd /tmp/app',
    'printf "a=1\\n" > src/a.conf',
    'ls src',
    'cat src/a.conf',
    'export MODE=test',
    'echo "$MODE" > mode.txt',
    'wc -c mode.txt',
    'grep -c a= src/a.conf',
    'cp src/a.conf src/b.conf',
    'ls -l src',
    'sed -i s/1/2/ src/b.conf',
    'cat src/b.conf',
    'find . -type f | sort',
    'du -s .',
    'tar cf /tmp/app.tar .',
    'tar tf /tmp/app.tar | wc -l',
    'rm -rf src/b.conf',
    'test -f src/a.conf && echo ok',
    'pwd',
  ];
  const runTask = async (sandbox) => {
    let step = 0;
    const model = {
      async call(tier) {
        if (tier === 'summary') return [{ name: 'taskSummary', args: { summary: 'done' } }];
        const next = commands[step++];
        return next ? [{ name: 'nextCommand', args: { command: next } }] : [{ name: 'taskComplete', args: { summary: 'done' } }];
      },
    };
    const r = await taskLoop.runTask({
      sandbox,
      taskDescription: 'build and package the app',
      model,
      limits: { maxCommands: 25, budgetMs: 120_000, commandTimeoutMs: 30_000 },
      log: kept.logs.create('task'),
      environment: `image ${MINIMAL_IMAGE}; working directory /workspace`,
    });
    if (r.commandsRun !== 20) throw new Error(`the task ran ${r.commandsRun} commands (${r.reason})`);
  };
  const task = await interleave(
    { 'kept shell': () => runTask(a), 'one exec per command': () => runTask(b) },
    {
      rounds: TASK_ROUNDS,
      warmup: 1,
      before: async () => void (await Promise.all([a.exec('rm -rf /tmp/app /tmp/app.tar'), b.exec('rm -rf /tmp/app /tmp/app.tar')])),
    },
  );
  console.log('\n| 20-command task (runTask) | median | p90 |\n|---|---|---|');
  for (const [name, t] of Object.entries(task.times)) console.log(`| ${name} | ${fmtMs(median(t))} | ${fmtMs(p90(t))} |`);
  const taskRatio = median(task.times['kept shell']) / median(task.times['one exec per command']);
  rows.push(`| 20-command task: kept shell / one exec per command | ${fmtRatio(taskRatio)} | (report) | - |`);

  console.log('\n| target | measured | limit | pass |\n|---|---|---|---|');
  for (const r of rows) console.log(r);
} finally {
  await Promise.all([kept.stopAll(), plain.stopAll()]).catch(() => undefined);
  rmQuiet(tmp);
}
process.exitCode = pass ? 0 : 1;
