#!/usr/bin/env node
// Where the time of sandbox.exec goes, without touching src/: the manager gets an engine
// wrapper (SandboxManagerOptions.engine) that times every engine call, and the log store's
// open/writeMeta are wrapped. Raw dockerode and CLI variants run interleaved beside it.
//
//   node bench/profile.mjs exec [rounds]     steps of sandbox.exec('true')
//   node bench/profile.mjs output [MiB] [rounds]   steps of a large output (default 1024 MiB)
//   VARIANTS=cliToFile,ours,... node bench/profile.mjs output   only these variants
//   GEN=lines node bench/profile.mjs output                      80-byte text lines, not zeros
import Docker from 'dockerode';
import { closeSync, createWriteStream, openSync, readdirSync, readFileSync, write, writeSync } from 'node:fs';
import { join } from 'node:path';
import { DockerEngine, loadConfig, SandboxManager } from '../dist/index.js';
import { FrameDemuxer } from '../dist/engine/demux.js';
import { StreamWindow } from '../dist/output/stream-window.js';
import { dockerToFile, docker, fmtMs, interleave, loadAvg, median, MiB, now, rmQuiet, tempDir } from './lib.mjs';

const mode = process.argv[2] ?? 'exec';

/** An engine that records, per exec: call→returned (create+start), first/last output, pauses, done. */
function timedEngine(inner, log) {
  return new Proxy(inner, {
    get(target, prop) {
      if (prop !== 'exec') {
        const v = Reflect.get(target, prop);
        return typeof v === 'function' ? v.bind(target) : v;
      }
      return async (id, spec, onOutput) => {
        const rec = { helper: spec.user === '0', t0: now(), chunks: 0, bytes: 0, cbMs: 0, pauses: 0, pausedMs: 0 };
        log.push(rec);
        const session = await target.exec(id, spec, (stream, chunk) => {
          const t = now();
          rec.first ??= t;
          rec.chunks++;
          rec.bytes += chunk.length;
          onOutput(stream, chunk);
          rec.last = now();
          rec.cbMs += rec.last - t;
        });
        rec.started = now();
        let pausedAt;
        const done = session.done.then((r) => ((rec.done = now()), r));
        return {
          ...session,
          done,
          pause: () => {
            rec.pauses++;
            pausedAt = now();
            session.pause();
          },
          resume: () => {
            if (pausedAt !== undefined) rec.pausedMs += now() - pausedAt;
            pausedAt = undefined;
            session.resume();
          },
        };
      };
    },
  });
}

const tmp = tempDir();
const config = loadConfig({ cwd: tmp });
const calls = [];
const manager = new SandboxManager({ config, engine: timedEngine(new DockerEngine(config.engine), calls) });
const logTimes = [];
const origOpen = manager.logs.open.bind(manager.logs);
manager.logs.open = (p) => {
  const t = now();
  const ws = origOpen(p);
  const rec = { openMs: now() - t, path: p };
  ws.once('open', () => (rec.opened = now() - t));
  ws.once('finish', () => (rec.finish = now()));
  ws.once('close', () => (rec.close = now()));
  logTimes.push(rec);
  return ws;
};
const origMeta = manager.logs.writeMeta.bind(manager.logs);
let metaMs = [];
manager.logs.writeMeta = async (...a) => {
  const t = now();
  await origMeta(...a);
  metaMs.push(now() - t);
};
const sandbox = await manager.start();
const dockerode = new Docker(config.engine.socketPath ? { socketPath: config.engine.socketPath } : undefined);
const container = dockerode.getContainer(sandbox.id);

try {
  if (mode === 'exec') await profileExec(Number(process.argv[3] ?? 100));
  else await profileOutput(Number(process.argv[3] ?? 1024), Number(process.argv[4] ?? 3));
} finally {
  await manager.stopAll();
  rmQuiet(tmp);
}

async function profileExec(rounds) {
  const steps = { pre: [], engineExec: [], toEnd: [], exitCode: [], post: [], total: [], logOpen: [], logClose: [], meta: [] };
  const rawSteps = { create: [], start: [], read: [], inspect: [], total: [] };
  const rawWrapped = [];
  const raw = async (cmd, into) => {
    const t0 = now();
    const exec = await container.exec({ Cmd: cmd, AttachStdout: true, AttachStderr: true, AttachStdin: false, Tty: false });
    const t1 = now();
    const sock = await exec.start({ hijack: true, stdin: false });
    const t2 = now();
    await new Promise((r) => {
      sock.on('end', r);
      sock.on('close', r);
      sock.resume();
    });
    const t3 = now();
    await exec.inspect();
    const t4 = now();
    if (into) {
      into.create.push(t1 - t0);
      into.start.push(t2 - t1);
      into.read.push(t3 - t2);
      into.inspect.push(t4 - t3);
      into.total.push(t4 - t0);
    }
    return t4 - t0;
  };
  const ours = async () => {
    calls.length = 0;
    logTimes.length = 0;
    metaMs = [];
    const t0 = now();
    await sandbox.exec('true');
    const t1 = now();
    const c = calls[0];
    const l = logTimes[0];
    steps.pre.push(c.t0 - t0);
    steps.engineExec.push(c.started - c.t0);
    steps.toEnd.push((c.last ?? c.started) - c.started);
    steps.exitCode.push(c.done - (c.last ?? c.started));
    steps.post.push(t1 - c.done);
    steps.total.push(t1 - t0);
    steps.logOpen.push(l.openMs);
    steps.logClose.push((l.close ?? t1) - c.done);
    steps.meta.push(metaMs[0] ?? 0);
  };
  const { times } = await interleave(
    {
      ours,
      raw: () => raw(['true'], rawSteps),
      rawWrapped: () => raw(['/bin/sh', '-c', 'printf "\\036%s\\036" "$$" >&2; exec /bin/sh -c "$1"', 'sh', 'true']).then((t) => rawWrapped.push(t)),
      cli: () => docker(['exec', sandbox.id, 'true']),
    },
    { rounds, warmup: 10 },
  );
  const row = (name, v) => console.log(`  ${name.padEnd(34)} ${fmtMs(median(v)).padStart(10)}`);
  console.log(`sandbox.exec('true') step medians over ${rounds} interleaved rounds (load ${loadAvg()}):`);
  row('validate + log path + open log', steps.pre);
  row('  of which createWriteStream', steps.logOpen);
  row('engine.exec (create + start hijack)', steps.engineExec);
  row('output until last byte (pid mark)', steps.toEnd);
  row('last byte -> exit code (inspect)', steps.exitCode);
  row('after exit: close log, render, meta', steps.post);
  row('  of which log close (from done)', steps.logClose);
  row('  of which writeMeta', steps.meta);
  row('TOTAL sandbox.exec', steps.total);
  console.log('raw dockerode exec of `true`:');
  row('create', rawSteps.create);
  row('start (hijack)', rawSteps.start);
  row('read to end', rawSteps.read);
  row('inspect', rawSteps.inspect);
  row('TOTAL raw', rawSteps.total);
  row('raw, same wrapped argv as ours', rawWrapped);
  row('docker exec CLI', times.cli);
}

/** CPU seconds (user+sys) used so far by a process, from /proc (Linux). */
function procCpuMs(pid) {
  try {
    const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return ((Number(f[11]) + Number(f[12])) * 1000) / 100; // utime, stime in 100 Hz ticks
  } catch {
    return NaN;
  }
}
function pidsOf(pattern) {
  const out = [];
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      if (pattern.test(readFileSync(`/proc/${d}/cmdline`, 'utf8').replace(/\0/g, ' '))) out.push(Number(d));
    } catch {
      // gone
    }
  }
  return out;
}

/** GEN=lines: 80-byte text lines instead of zeros (many newlines for the capture to count). */
function generator(mb) {
  return process.env.GEN === 'lines'
    ? `yes "$(printf '%079d' 0)" | dd bs=1048576 count=${mb} iflag=fullblock 2>/dev/null`
    : `dd if=/dev/zero bs=1048576 count=${mb} 2>/dev/null`;
}

async function profileOutput(mb, rounds) {
  const gen = generator(mb);
  const cmd = ['/bin/sh', '-c', gen];
  const dockerd = pidsOf(/^\S*dockerd\b/);
  const shim = pidsOf(new RegExp(`containerd-shim.* -id ${sandbox.id}`));
  const cpu = {};
  const withCpu = (name, f) => async () => {
    const c0 = process.cpuUsage();
    const d0 = dockerd.reduce((s, p) => s + procCpuMs(p), 0);
    const s0 = shim.reduce((s, p) => s + procCpuMs(p), 0);
    const r = await f();
    const c = process.cpuUsage(c0);
    const rec = (cpu[name] ??= { node: [], dockerd: [], shim: [], cli: [] });
    rec.node.push((c.user + c.system) / 1000);
    (rec.nodeSys ??= []).push(c.system / 1000);
    rec.dockerd.push(dockerd.reduce((s, p) => s + procCpuMs(p), 0) - d0);
    rec.shim.push(shim.reduce((s, p) => s + procCpuMs(p), 0) - s0);
    rec.cli.push(r?.cliCpuMs ?? 0);
    return r;
  };
  // The raw variants: socket + demux (discard); + the log file written as ours does (WriteStream,
// 1 MiB high-water mark, pause on back-pressure); + copied into 1 MiB buffers; + writeSync.
  const raw = async (mode) => {
    const exec = await container.exec({ Cmd: cmd, AttachStdout: true, AttachStderr: true });
    const sock = await exec.start({ hijack: true, stdin: false });
    const file = join(tmp, 'raw.out');
    let pauses = 0;
    let sink = () => {};
    let finish = async () => {};
    if (mode === 'stream') {
      const ws = createWriteStream(file, { flags: 'w', highWaterMark: MiB });
      let paused = false;
      sink = (b) => {
        if (!ws.write(b) && !paused) {
          paused = true;
          pauses++;
          sock.pause();
          ws.once('drain', () => {
            paused = false;
            sock.resume();
          });
        }
      };
      finish = () => new Promise((r) => ws.end(r));
    } else if (mode === 'sync') {
      // What the docker CLI does: a blocking write of each chunk before reading on.
      const fd = openSync(file, 'w');
      sink = (b) => {
        let off = 0;
        while (off < b.length) off += writeSync(fd, b, off);
      };
      finish = async () => closeSync(fd);
    } else if (mode === 'batched') {
      // Copy into 1 MiB buffers; one fs.write in flight; pause the socket while two are full.
      const fd = openSync(file, 'w');
      let cur = Buffer.allocUnsafe(MiB);
      let len = 0;
      let inflight = Promise.resolve();
      let queued = 0;
      const flush = () => {
        const buf = cur.subarray(0, len);
        cur = Buffer.allocUnsafe(MiB);
        len = 0;
        queued++;
        inflight = inflight.then(() => new Promise((r) => writeAll(fd, buf, r))).then(() => {
          queued--;
          if (queued < 2 && sock.isPaused()) sock.resume();
        });
        if (queued >= 2) {
          pauses++;
          sock.pause();
        }
      };
      sink = (b) => {
        let off = 0;
        while (off < b.length) {
          const n = b.copy(cur, len, off);
          len += n;
          off += n;
          if (len === cur.length) flush();
        }
      };
      finish = async () => {
        if (len) flush();
        await inflight;
        closeSync(fd);
      };
    }
    const demux = new FrameDemuxer((_s, b) => sink(b));
    await new Promise((r) => {
      sock.on('data', (c) => demux.push(c));
      sock.on('end', r);
      sock.on('close', r);
    });
    await finish();
    await exec.inspect();
    return { pauses, file };
  };
  const timeFile = join(tmp, 'time.out');
  const oursDetail = [];
  const variants = {
    cliToFile: withCpu('cliToFile', async () => {
      await dockerToFile(['exec', sandbox.id, ...cmd], join(tmp, 'cli.out'), ['/usr/bin/time', '-o', timeFile, '-f', '%U %S']);
      const [u, s] = readFileSync(timeFile, 'utf8').trim().split('\n').pop().split(' ').map(Number);
      return { cliCpuMs: (u + s) * 1000, file: join(tmp, 'cli.out') };
    }),
    rawDemuxDiscard: withCpu('rawDemuxDiscard', () => raw('discard')),
    rawDemuxWriteStream: withCpu('rawDemuxWriteStream', () => raw('stream')),
    rawDemuxBatched1MiB: withCpu('rawDemuxBatched1MiB', () => raw('batched')),
    rawDemuxWriteSync: withCpu('rawDemuxWriteSync', () => raw('sync')),
    engineNoop: withCpu('engineNoop', async () => {
      const s = await sandbox.deps.engine.exec(sandbox.id, { cmd }, () => {});
      await s.done;
    }),
    // What-if variants: ours with StreamWindow.push counting newlines by an indexOf loop (the
    // code before the SWAR change), or not counting at all (an upper bound). Patched on the
    // prototype for the one call only; src/ is not touched.
    oursIndexOfCount: withCpu('oursIndexOfCount', () => withPush(pushCountingBy(countByIndexOf), oursOnce)),
    oursNoCount: withCpu('oursNoCount', () => withPush(pushCountingBy(() => 0), oursOnce)),
    ours: withCpu('ours', async () => {
      calls.length = 0;
      const t0 = now();
      const r = await sandbox.exec(gen, { timeoutMs: 600_000 });
      const t1 = now();
      const c = calls[0];
      oursDetail.push({ total: t1 - t0, engineExec: c.started - c.t0, stream: c.last - c.started, cbMs: c.cbMs, chunks: c.chunks, pauses: c.pauses, pausedMs: c.pausedMs, afterDone: t1 - c.done, lastToDone: c.done - c.last });
      return { file: r.logPath };
    }),
  };
  const only = process.env.VARIANTS?.split(',');
  if (only) for (const k of Object.keys(variants)) if (!only.includes(k)) delete variants[k];
  const { times, details } = await interleave(variants, { rounds, warmup: 0, between: (_n, d) => d?.file && rmQuiet(d.file) });
  console.log(`${mb} MiB of ${process.env.GEN === 'lines' ? '80-byte text lines' : 'zeros'}, ${rounds} interleaved rounds (load ${loadAvg()}). Medians: wall, throughput, CPU ms of node / docker CLI / dockerd / container shim:`);
  for (const [name, v] of Object.entries(times)) {
    const c = cpu[name];
    const pauses = details[name][0]?.pauses !== undefined ? `  pauses ${median(details[name].map((d) => d.pauses))}` : '';
    console.log(
      `  ${name.padEnd(20)} ${fmtMs(median(v)).padStart(9)} ${((mb * MiB) / 1e6 / (median(v) / 1000)).toFixed(0).padStart(5)} MB/s` +
        `  cpu node ${median(c.node).toFixed(0).padStart(5)} (sys ${median(c.nodeSys).toFixed(0).padStart(4)})  cli ${median(c.cli).toFixed(0).padStart(5)}  dockerd ${median(c.dockerd).toFixed(0).padStart(5)}  shim ${median(c.shim).toFixed(0).padStart(5)}` +
        `  (runs ${v.map((x) => (x / 1000).toFixed(1)).join(' ')} s)${pauses}`,
    );
  }
  const m = (k) => fmtMs(median(oursDetail.map((d) => d[k])));
  console.log(`  ours: engine.exec ${m('engineExec')}, streaming ${m('stream')}, in onOutput callbacks ${m('cbMs')} over ${median(oursDetail.map((d) => d.chunks))} chunks, ` +
    `${median(oursDetail.map((d) => d.pauses))} pauses totalling ${m('pausedMs')}, last byte -> exit ${m('lastToDone')}, after exit ${m('afterDone')}`);
}

async function oursOnce() {
  const r = await sandbox.exec(generator(Number(process.argv[3] ?? 1024)), { timeoutMs: 600_000 });
  return { file: r.logPath };
}

async function withPush(push, f) {
  const orig = StreamWindow.prototype.push;
  StreamWindow.prototype.push = push;
  try {
    return await f();
  } finally {
    StreamWindow.prototype.push = orig;
  }
}

/** StreamWindow.push as in dist, with another newline counter. */
function pushCountingBy(count) {
  return function push(chunk) {
    const n = chunk.length;
    if (n === 0) return;
    this.total += n;
    this.lastByte = chunk[n - 1];
    this.newlines += count(chunk);
    if (!this.headFull) this.pushHead(chunk);
    this.pushRing(chunk);
  };
}

function countByIndexOf(buf) {
  let count = 0;
  let pos = buf.indexOf(10);
  while (pos !== -1) {
    count++;
    pos = buf.indexOf(10, pos + 1);
  }
  return count;
}

function writeAll(fd, buf, done) {
  write(fd, buf, 0, buf.length, null, (err, n) => {
    if (err) throw err;
    if (n < buf.length) writeAll(fd, buf.subarray(n), done);
    else done();
  });
}
