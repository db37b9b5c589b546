#!/usr/bin/env node
// Where the time goes, without touching src/ (run after a build): the manager gets an engine
// wrapper (SandboxManagerOptions.engine) timing each exec, and its log store's methods are
// wrapped. Variants run interleaved (bench/lib.mjs); medians are printed (bench/README.md).
//
//   node bench/profile.mjs exec [rounds]           the steps of sandbox.exec('true') beside a raw dockerode exec (100)
//   node bench/profile.mjs output [MiB] [rounds]   a large output, layer by layer (1024 MiB, 3 rounds)
//   GEN=lines node bench/profile.mjs output ...    80-byte text lines instead of zeros
import { execFileSync } from 'node:child_process';
import { closeSync, existsSync, openSync, readdirSync, readFileSync, statSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { DockerEngine, SandboxManager } from '../dist/index.js';
import { FrameDemuxer } from '../dist/engine/demux.js';
import { openExecStream } from '../dist/engine/exec-stream.js';
import { wrapCommand } from '../dist/commands/wrapper-protocol.js';
import { benchEngine } from './bench-engine.mjs';
import { MINIMAL_IMAGE, MiB, dockerToFile, fmtMs, interleave, loadAvg, median, now, rmQuiet, tempDir } from './lib.mjs';

const [mode = 'exec', ...nums] = process.argv.slice(2);
const args = nums.map(Number);
if (!['exec', 'output'].includes(mode) || args.some((n) => !Number.isInteger(n) || n < 1)) {
  console.error('Usage: node bench/profile.mjs exec [rounds] | output [MiB] [rounds]   (GEN=lines for text lines)');
  process.exit(2);
}

const tmp = tempDir();
const { config, connection: conn, dockerode } = benchEngine(tmp);
const transport =
  conn.kind === 'socket'
    ? { kind: 'net', options: { path: conn.socketPath }, hostHeader: 'localhost' }
    : { kind: 'net', options: { host: conn.host, port: conn.port }, hostHeader: `${conn.host}:${conn.port}` };

// The manager's exit hook removes its container on any exit; Ctrl-C exits through 'exit'.
process.on('exit', () => rmQuiet(tmp));
for (const sig of ['SIGINT', 'SIGTERM'])
  process.on(sig, () => (console.error(`\n${sig}: removing the container and files.`), process.exit(130)));

// ---------------------------------------------------------------- instrumentation
/** The record of the sandbox.exec in progress: every wrapper below writes into it. */
let cur = {};
const engine = new DockerEngine(config.engine);
// Each dockerode request of the engine (a private field: fine for a diagnostic), by kind.
const modem = engine.docker.modem;
const dial = modem.dial.bind(modem);
modem.dial = (opts, cb) => {
  const kind = /\/exec$/.test(opts.path.split('?')[0]) ? 'create' : /^\/exec\/[^/]+\/json/.test(opts.path) ? 'inspect' : undefined;
  const t = now();
  return dial(opts, (err, data) => {
    if (kind) (cur[kind] ??= []).push(now() - t);
    cb(err, data);
  });
};
/** The engine as the manager sees it, exec timed: call, returned (create + start), last byte, time in callbacks, done. */
const timedEngine = new Proxy(engine, {
  get(target, prop) {
    const v = Reflect.get(target, prop);
    if (prop !== 'exec') return typeof v === 'function' ? v.bind(target) : v;
    return async (id, spec, onOutput) => {
      const r = cur;
      Object.assign(r, { call: now(), chunks: 0, cbMs: 0 });
      const session = await target.exec(id, spec, (stream, chunk) => {
        const t = now();
        r.chunks++;
        onOutput(stream, chunk);
        r.last = now();
        r.cbMs += r.last - t;
      });
      r.returned = now();
      return { ...session, done: session.done.then((x) => ((r.done = now()), x)) };
    };
  },
});
const manager = new SandboxManager({ config, engine: timedEngine });
const logs = manager.logs; // the LogStore every sandbox of this manager writes to
const orig = { create: logs.create.bind(logs), writeMeta: logs.writeMeta.bind(logs) };
logs.create = (label) => {
  const t0 = now();
  const sink = orig.create(label);
  cur.logOpen = now() - t0; // folder check (mkdir and prune the first time) + exclusive create
  const end = sink.end.bind(sink);
  sink.end = () => ((cur.closeT0 = now()), end(), (cur.logClose = now() - cur.closeT0));
  return sink;
};
logs.writeMeta = async (...a) => {
  const t = now();
  await orig.writeMeta(...a);
  cur.meta = now() - t;
};

const sum = (v = []) => v.reduce((s, x) => s + x, 0);
const row = (name, v, extra = '') => console.log(`  ${name.padEnd(44)} ${fmtMs(median(v)).padStart(9)}${extra}`);

/** A raw dockerode exec: create, start (hijack), read to the end, inspect. */
async function rawExec(cmd) {
  const t0 = now();
  const exec = await container.exec({ Cmd: cmd, AttachStdin: false, AttachStdout: true, AttachStderr: true, Tty: false });
  const t1 = now();
  const sock = await exec.start({ hijack: true, stdin: false });
  const t2 = now();
  await new Promise((resolve, reject) => sock.on('end', resolve).on('close', resolve).on('error', reject).resume());
  const t3 = now();
  await exec.inspect();
  return { create: t1 - t0, start: t2 - t1, read: t3 - t2, inspect: now() - t3 };
}

async function profileExec(rounds) {
  const variants = {
    "sandbox.exec('true')": async () => {
      cur = { t0: now() };
      const r = await sandbox.exec('true');
      if (r.exitCode !== 0) throw new Error(`sandbox.exec('true') exited ${r.exitCode}`);
      return { ...cur, end: now() };
    },
    'raw dockerode exec': () => rawExec(['true']),
    "raw dockerode, ours' wrapped argv": () => rawExec(wrapCommand('true')),
  };
  const { times, details } = await interleave(variants, { rounds, warmup: 10 });
  const o = details["sandbox.exec('true')"];
  const step = (f) => o.map(f);
  console.log(
    `sandbox.exec('true'), medians of ${rounds} interleaved rounds after 10 warm-up (load ${loadAvg()}); steps' medians need not add up:`,
  );
  row(
    'before engine.exec (validate, log path, open)',
    step((c) => c.call - c.t0),
  );
  row(
    '  of which log folder check + create',
    step((c) => c.logOpen),
  );
  row(
    'engine.exec: exec create',
    step((c) => sum(c.create)),
  );
  row(
    'engine.exec: start (own connection, 101)',
    step((c) => c.returned - c.call - sum(c.create)),
  );
  row(
    'output: returned -> last byte (wrapper runs)',
    step((c) => (c.last ?? c.returned) - c.returned),
  );
  row(
    'exit code: last byte -> done',
    step((c) => c.done - (c.last ?? c.returned)),
    `   (${median(step((c) => c.inspect?.length ?? 0))} inspect)`,
  );
  row(
    '  of which exec inspect',
    step((c) => sum(c.inspect)),
  );
  row(
    'after done: log close, render, metadata',
    step((c) => c.end - c.done),
  );
  row(
    '  of which log close',
    step((c) => c.logClose),
  );
  row(
    '  of which writeMeta',
    step((c) => c.meta),
  );
  row('TOTAL sandbox.exec', times["sandbox.exec('true')"]);
  console.log('raw dockerode exec of `true`:');
  for (const k of ['create', 'start', 'read', 'inspect'])
    row(
      k === 'start' ? 'start (hijack)' : k === 'read' ? 'read to end' : k,
      details['raw dockerode exec'].map((d) => d[k]),
    );
  row('TOTAL raw', times['raw dockerode exec']);
  row("TOTAL raw, ours' wrapped argv", times["raw dockerode, ours' wrapped argv"]);
}

// ---------------------------------------------------------------- output
/** `f()`, or '' when it throws (a process gone meanwhile, a tool not installed). */
function quiet(f) {
  try {
    return f();
  } catch {
    return '';
  }
}
/** CPU milliseconds (utime + stime, in 10 ms clock ticks) the processes have used so far, from /proc; NaN when unreadable. */
function procCpuMs(pids) {
  const fields = pids.map((p) =>
    quiet(() => readFileSync(`/proc/${p}/stat`, 'utf8'))
      .split(') ')
      .pop()
      .split(' '),
  );
  return pids.length ? sum(fields.map((f) => (Number(f[11]) + Number(f[12])) * 10)) : NaN;
}
/** The containerd-shim process(es) of container `id`, found in /proc by their command line. */
function shimPids(id) {
  return readdirSync('/proc').filter((pid) => {
    const argv = quiet(() => readFileSync(`/proc/${pid}/cmdline`, 'utf8')).split('\0');
    return /containerd-shim/.test(argv[0]) && argv.includes(id);
  });
}

/** Writes all of `buf` to `fd`, synchronously. */
function writeAll(fd, buf) {
  for (let off = 0; off < buf.length;) off += writeSync(fd, buf, off, buf.length - off);
}
/** Runs `f(fd)` with `file` open for writing, closed however `f` ends; its result, with `file`. */
async function withFile(file, f) {
  const fd = openSync(file, 'w');
  try {
    return { ...(await f(fd)), file };
  } finally {
    closeSync(fd);
  }
}

/** Our transport alone: exec create via dockerode, openExecStream + FrameDemuxer; each frame counted (and written to `fd`). */
async function transportRun(cmd, fd) {
  const exec = await container.exec({ Cmd: cmd, AttachStdout: true, AttachStderr: true });
  let bytes = 0;
  const demux = new FrameDemuxer((_stream, payload) => {
    bytes += payload.length;
    if (fd !== undefined) writeAll(fd, payload);
  });
  const s = await openExecStream(transport, exec.id, (buf, start, end) => demux.push(buf.subarray(start, end)));
  await s.ended;
  return { bytes };
}

async function profileOutput(mb, rounds) {
  const LINES_FILE = '/tmp/bench-lines-64MiB.txt'; // as bench/run.mjs: 64 MiB of lines made once, replayed (cheap to generate)
  const lines = process.env.GEN === 'lines';
  const gen = (m) =>
    lines
      ? `i=0; while [ $i -lt ${Math.floor(m / 64)} ]; do dd if=${LINES_FILE} bs=1048576 2>/dev/null; i=$((i+1)); done${m % 64 ? `; dd if=${LINES_FILE} bs=1048576 count=${m % 64} 2>/dev/null` : ''}`
      : `dd if=/dev/zero bs=1048576 count=${m} 2>/dev/null`;
  if (lines) {
    const r = await sandbox.exec(`yes "$(printf '%079d' 0)" | dd bs=1048576 count=64 iflag=fullblock of=${LINES_FILE} 2>/dev/null`);
    if (r.exitCode !== 0) throw new Error(`making ${LINES_FILE} failed: ${r.stderr}`);
  }
  const dockerd = quiet(() => execFileSync('pidof', ['dockerd'], { encoding: 'utf8' }))
    .split(/\s+/)
    .filter(Boolean);
  const shim = shimPids(sandbox.id);
  const TIME = existsSync('/usr/bin/time') ? '/usr/bin/time' : undefined;
  const timeFile = join(tmp, 'time.txt');
  const out = join(tmp, 'output.bin');
  const plainEngine = new DockerEngine(config.engine); // not the manager's instrumented one

  /** Runs `f`, adding the CPU used meanwhile by this process, dockerd and the container's shim. */
  const withCpu = (f) => async () => {
    const c0 = process.cpuUsage();
    const d0 = procCpuMs(dockerd);
    const s0 = procCpuMs(shim);
    const r = await f();
    const c = process.cpuUsage(c0);
    return { ...r, node: (c.user + c.system) / 1000, sys: c.system / 1000, dockerd: procCpuMs(dockerd) - d0, shim: procCpuMs(shim) - s0 };
  };
  const make = (m) => {
    const cmd = ['/bin/sh', '-c', gen(m)];
    return {
      cli: withCpu(async () => {
        await dockerToFile(['exec', sandbox.id, ...cmd], out, TIME ? [TIME, '-o', timeFile, '-f', '%U %S'] : []);
        const [u, s] = TIME ? readFileSync(timeFile, 'utf8').trim().split('\n').pop().split(' ').map(Number) : [NaN, NaN];
        return { file: out, cli: (u + s) * 1000 };
      }),
      transport: withCpu(() => transportRun(cmd)),
      'transport+file': withCpu(() => withFile(out, (fd) => transportRun(cmd, fd))),
      engine: withCpu(() =>
        withFile(out, async (fd) => {
          const s = await plainEngine.exec(sandbox.id, { cmd }, (_stream, chunk) => writeAll(fd, chunk));
          const { exitCode } = await s.done;
          if (exitCode !== 0) throw new Error(`engine.exec exited ${exitCode}`);
        }),
      ),
      ours: withCpu(async () => {
        cur = { t0: now() };
        const r = await sandbox.exec(gen(m), { timeoutMs: 3_600_000 });
        if (r.exitCode !== 0 || r.bytes.stdout !== m * MiB)
          throw new Error(`sandbox.exec: exit ${r.exitCode}, ${r.bytes.stdout} bytes of stdout`);
        return { file: r.logPath, ...cur, end: now() };
      }),
    };
  };
  // Untimed, after each run: the byte count checked, the file (and ours' .json) deleted.
  const check = (m) => (name, d) => {
    const bytes = d.file ? statSync(d.file).size : d.bytes;
    if (d.file) [d.file, d.file.replace(/\.log$/, '.json')].forEach(rmQuiet);
    if (bytes !== m * MiB) throw new Error(`${name}: ${bytes} bytes, expected ${m * MiB}`);
  };
  await interleave(make(Math.min(mb, 64)), { rounds: 1, between: check(Math.min(mb, 64)) }); // warm-up
  const { times, details } = await interleave(make(mb), { rounds, between: check(mb) });

  const ms = (v) => (Number.isFinite(v) ? v.toFixed(0) : 'n/a').padStart(5);
  console.log(
    `${mb} MiB of ${lines ? '80-byte text lines' : 'zeros'} (\`${gen(mb)}\`), ${rounds} interleaved rounds after a warm-up (load ${loadAvg()}).`,
  );
  console.log(
    `Medians: wall, throughput, CPU ms (user+sys) meanwhile of this process (its sys), the docker CLI, dockerd${dockerd.length ? '' : ' (not found)'}, the container's shim${shim.length ? '' : ' (not found)'}:`,
  );
  for (const [name, t] of Object.entries(times)) {
    const d = details[name];
    const m = (k) => ms(median(d.map((x) => x[k])));
    console.log(
      `  ${name.padEnd(15)} ${fmtMs(median(t)).padStart(9)} ${ms((mb * MiB) / 1e6 / (median(t) / 1000))} MB/s   node ${m('node')} (sys ${m('sys')})   cli ${name === 'cli' ? m('cli') : '    -'}   dockerd ${m('dockerd')}   shim ${m('shim')}   runs ${t.map(fmtMs).join(', ')}`,
    );
  }
  const o = details.ours;
  const om = (f) => fmtMs(median(o.map(f)));
  console.log(
    `  ours: engine.exec ${om((c) => c.returned - c.call)}, streaming ${om((c) => c.last - c.returned)} of which ${om((c) => c.cbMs)} in its output callback ` +
      `(capture + log write, ${Math.round(median(o.map((c) => c.chunks)))} chunks), last byte -> exit code ${om((c) => c.done - c.last)}, after that ${om((c) => c.end - c.done)}`,
  );
}

// ---------------------------------------------------------------- run
const sandbox = await manager.start({ image: MINIMAL_IMAGE });
const container = dockerode.getContainer(sandbox.id);
try {
  if (mode === 'exec') await profileExec(args[0] ?? 100);
  else await profileOutput(args[0] ?? 1024, args[1] ?? 3);
} finally {
  await manager.stopAll();
}
