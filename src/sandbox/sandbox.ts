import { randomBytes } from 'node:crypto';
import { BOUNDS } from '../config.js';
import type { ContainerEngine, ExecSession, StreamId } from '../engine/container-engine.js';
import { SandboxError } from '../errors.js';
import type { LogSink, LogStore } from '../capture/log-store.js';
import { StreamWindow } from '../capture/stream-window.js';
import type { ExecOptions, ExecResult } from './exec-types.js';
import { CGROUP_COUNTERS_SCRIPT, KILL_TREE_SCRIPT, parseCounters, parseTrailer, PID_MARK, wrapArgv, wrapShellCommand } from './shell-scripts.js';

export const TIMEOUT_EXIT_CODE = 124;
export const CANCELED_EXIT_CODE = 137;
/** Environment variable marking every process a command starts. */
export const EXEC_MARK_VAR = 'GENAICODE_DOCKER_EXEC';
/** How long a killed command's output may take to close before we stop reading it. */
const KILL_DRAIN_MS = 5_000;
const MAX_TIMEOUT_MS = BOUNDS.timeoutMs.max;

export interface SandboxInfo {
  id: string;
  name: string;
  image: string;
  sessionId: string;
  workdir: string;
  createdAt: Date;
  expiresAt: Date;
  memoryBytes: number;
  pidsLimit: number;
}

export interface SandboxDeps {
  engine: ContainerEngine;
  logs: LogStore;
  exec: { timeoutMs: number; maxBytes: number; maxLines: number };
  onStopped: (sandbox: Sandbox) => void;
}

/**
 * Reads the wrapper's header `\x1e<pid>[:<oom kills>:<refused forks>]\x1e` from the start
 * of stderr, passing everything after it on.
 */
class PidMarkReader {
  pid: number | undefined;
  /** The cgroup counters when the command started, if the header had them. */
  startCounters: Counters | undefined;
  private state: 'start' | 'digits' | 'done' = 'start';
  private digits = '';
  private waiters: Array<(pid: number | undefined) => void> = [];

  consume(chunk: Buffer): Buffer {
    let i = 0;
    while (this.state !== 'done' && i < chunk.length) {
      const b = chunk[i]!;
      if (this.state === 'start') {
        if (b !== PID_MARK) return this.finish(undefined), chunk;
        this.state = 'digits';
      } else if (b === PID_MARK && /^\d+(:\d+:\d+)?$/.test(this.digits)) {
        const [pid, oom, pids] = this.digits.split(':').map(Number);
        if (oom !== undefined && pids !== undefined) this.startCounters = { oomKills: oom, pidsRefused: pids };
        this.finish(pid);
      } else if (((b >= 0x30 && b <= 0x39) || b === 0x3a) && this.digits.length < 40) {
        this.digits += String.fromCharCode(b);
      } else {
        // Not our mark after all: hand back what was held, then the rest.
        const held = Buffer.from(`\x1e${this.digits}`, 'latin1');
        this.finish(undefined);
        return Buffer.concat([held, chunk.subarray(i)]);
      }
      i++;
    }
    return i === 0 ? chunk : chunk.subarray(i);
  }

  get done(): boolean {
    return this.state === 'done';
  }

  finish(pid: number | undefined): void {
    if (this.state === 'done') return;
    this.state = 'done';
    this.pid = pid;
    for (const w of this.waiters) w(pid);
    this.waiters = [];
  }

  wait(): Promise<number | undefined> {
    return this.state === 'done' ? Promise.resolve(this.pid) : new Promise((r) => this.waiters.push(r));
  }
}

interface Counters {
  oomKills: number;
  pidsRefused: number;
}

/** Longest trailer `\x1e<n>:<n>\x1e` (two 12-digit numbers). */
const TRAILER_MAX = 28;
const EMPTY = Buffer.alloc(0);

/**
 * Where a trailer (whole, or the start of one) begins at the end of `buf`; `buf.length`
 * when the end cannot be one, which is every ordinary chunk of stderr.
 */
function trailerStart(buf: Buffer): number {
  const n = buf.length;
  const last = buf.lastIndexOf(PID_MARK);
  if (last === -1 || last < n - TRAILER_MAX) return n;
  if (last === n - 1) {
    // A closing mark: is there a whole trailer before it? Else it may open one.
    const open = buf.lastIndexOf(PID_MARK, n - 2);
    if (open !== -1 && open >= n - TRAILER_MAX && /^\x1e\d+:\d+\x1e$/.test(buf.toString('latin1', open))) return open;
    return last;
  }
  return /^\x1e[\d:]*$/.test(buf.toString('latin1', last)) ? last : n;
}

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

function validateExecOptions(options: ExecOptions, defaults: SandboxDeps['exec']): number {
  const timeoutMs = options.timeoutMs ?? defaults.timeoutMs;
  if (!Number.isInteger(timeoutMs) || timeoutMs <= 0 || timeoutMs > MAX_TIMEOUT_MS) {
    throw new SandboxError('INVALID_ARGUMENT', `timeoutMs must be a whole number of milliseconds between 1 and ${MAX_TIMEOUT_MS}, got ${String(options.timeoutMs)}.`);
  }
  if (options.workdir !== undefined && !options.workdir.startsWith('/')) {
    throw new SandboxError('INVALID_ARGUMENT', `workdir must be an absolute path in the container, got ${JSON.stringify(options.workdir)}.`);
  }
  for (const key of Object.keys(options.env ?? {})) {
    if (!ENV_NAME.test(key)) throw new SandboxError('INVALID_ARGUMENT', `Environment variable name ${JSON.stringify(key)} is not valid.`);
  }
  return timeoutMs;
}

/** One started container: run commands in it, then stop it. `stop()` is idempotent. */
export class Sandbox implements AsyncDisposable {
  private stopped = false;
  private stopping: Promise<void> | undefined;
  /** cgroup counters as last read; a fresh container starts at zero. */
  private counters: Counters = { oomKills: 0, pidsRefused: 0 };
  /**
   * Commands whose process runs now (from its exec's start to its end), each with whether
   * another one ran beside it: the limit counters are the container's, so a limit hit then
   * cannot be pinned on one of them.
   */
  private readonly running = new Set<{ overlapped: boolean }>();

  constructor(
    readonly info: Readonly<SandboxInfo>,
    private readonly deps: SandboxDeps,
  ) {}

  get id(): string {
    return this.info.id;
  }

  get name(): string {
    return this.info.name;
  }

  get isStopped(): boolean {
    return this.stopped;
  }

  /**
   * Runs a command (a shell string, or an argument vector run without a shell).
   * Output is demultiplexed frame by frame, every byte teed to the log file, and only
   * bounded windows kept in memory. A timeout or abort kills the command's whole
   * process tree in the container.
   * @throws SandboxError only for infrastructure failures (container gone, engine down).
   */
  async exec(command: string | readonly string[], options: ExecOptions = {}): Promise<ExecResult> {
    const timeoutMs = validateExecOptions(options, this.deps.exec);
    const commandText = typeof command === 'string' ? command : command.join(' ');
    if (commandText.trim() === '') throw new SandboxError('INVALID_ARGUMENT', 'The command is empty.');
    if (this.stopped) throw this.goneError();
    if (options.signal?.aborted) throw new SandboxError('ABORTED', `Not started: the operation was aborted before "${commandText.slice(0, 80)}" ran.`);

    const started = performance.now();
    const label = options.label ?? commandText.trim().split(/\s+/)[0] ?? 'cmd';
    // A log that cannot be written (disk full, a folder that is not ours) does not stop the
    // command: the result says the log is incomplete (log.error).
    const log = this.deps.logs.create(label);
    const logPath = log.path;
    const out = new StreamWindow(this.deps.exec.maxBytes, this.deps.exec.maxLines);
    const err = new StreamWindow(this.deps.exec.maxBytes, this.deps.exec.maxLines);
    const marker = new PidMarkReader();
    // Inherited by everything the command starts, so the kill finds even re-parented daemons.
    const execMark = `${EXEC_MARK_VAR}=${randomBytes(8).toString('hex')}`;

    // The end of stderr may be the wrapper's trailer: such bytes wait here until the end.
    let held = EMPTY;
    const take = (stream: StreamId, chunk: Buffer) => {
      (stream === 'stdout' ? out : err).push(chunk);
      // A synchronous write: while it runs no more output is read, which is the backpressure.
      log.write(chunk);
    };
    const onOutput = (stream: StreamId, data: Buffer) => {
      let chunk = data;
      if (stream === 'stdout') return take('stdout', chunk);
      if (!marker.done) {
        chunk = marker.consume(chunk);
        if (chunk.length === 0) return;
      }
      // Only bytes that could be the start of the trailer wait (normally none), so the
      // log keeps the order in which stdout and stderr arrived.
      const joined = held.length ? Buffer.concat([held, chunk]) : chunk;
      const cut = trailerStart(joined);
      if (cut > 0) take('stderr', joined.subarray(0, cut));
      held = cut < joined.length ? Buffer.from(joined.subarray(cut)) : EMPTY;
    };

    // From the start of its process to its end (killed, if it was), this command is running.
    const slot = { overlapped: this.running.size > 0 };
    for (const other of this.running) other.overlapped = true;
    this.running.add(slot);
    let live: ExecSession;
    try {
      const env = [execMark, ...Object.entries(options.env ?? {}).map(([k, v]) => `${k}=${v}`)];
      live = await this.deps.engine.exec(
        this.id,
        { cmd: typeof command === 'string' ? wrapShellCommand(command) : wrapArgv(command), env, workdir: options.workdir ?? this.info.workdir },
        onOutput,
      );
    } catch (e) {
      this.running.delete(slot);
      log.end();
      throw e instanceof SandboxError && e.code === 'CONTAINER_NOT_FOUND' ? this.goneError(e) : e;
    }

    let interrupted: 'timeout' | 'cancel' | undefined;
    let killReport: string | undefined;
    let killing: Promise<void> | undefined;
    const interrupt = (why: 'timeout' | 'cancel') => {
      if (interrupted) return;
      interrupted = why;
      killing = (async () => {
        const pid = await Promise.race([marker.wait(), delay(2_000).then(() => undefined)]);
        killReport = await this.killTree(pid ?? 0, execMark);
        // Output may stay open if something outside the tree holds it: stop reading.
        const drained = await Promise.race([live.done.then(() => true, () => true), delay(KILL_DRAIN_MS).then(() => false)]);
        if (!drained) live.detach();
      })();
    };
    const timer = setTimeout(() => interrupt('timeout'), timeoutMs);
    const onAbort = () => interrupt('cancel');
    options.signal?.addEventListener('abort', onAbort, { once: true });

    let exitCode: number | null;
    try {
      ({ exitCode } = await live.done);
    } catch (e) {
      if (!interrupted) {
        this.running.delete(slot);
        log.end();
        throw e;
      }
      exitCode = null;
    } finally {
      clearTimeout(timer);
      options.signal?.removeEventListener('abort', onAbort);
    }
    if (killing) await killing;
    this.running.delete(slot);
    const trailer = parseTrailer(held);
    if (held.length) take('stderr', trailer ? held.subarray(0, held.length - trailer.length) : held);
    log.end();

    if (exitCode === null && !interrupted) {
      if (this.stopped || !(await this.deps.engine.inspectContainer(this.id))?.running) {
        throw this.goneError(undefined, logPath);
      }
    }

    let oomKilled = false;
    let pidsLimitHit = false;
    const before = marker.startCounters;
    if (before && trailer) {
      // The wrapper read the counters before and after: exact, and no extra exec.
      oomKilled = trailer.oomKills > before.oomKills;
      pidsLimitHit = trailer.pidsRefused > before.pidsRefused;
    } else if (interrupted || (exitCode !== null && exitCode !== 0)) {
      // Killed before its trailer (or a wrapper without counters): one helper exec reads them.
      ({ oomKilled, pidsLimitHit } = await this.readLimitCounters(before));
    }
    const timedOut = interrupted === 'timeout';
    const canceled = interrupted === 'cancel';
    const finalExit = timedOut ? TIMEOUT_EXIT_CODE : canceled ? CANCELED_EXIT_CODE : (exitCode ?? 1);
    const reason = this.explain({ timedOut, canceled, oomKilled, pidsLimitHit, overlapped: slot.overlapped, timeoutMs, killReport, ...(log.error ? { logError: log.error } : {}) });
    const stdout = out.render(logPath);
    const stderr = err.render(logPath);
    const result: ExecResult = {
      command: commandText,
      exitCode: finalExit,
      stdout: stdout.text,
      stderr: stderr.text,
      truncated: stdout.truncated || stderr.truncated,
      timedOut,
      canceled,
      oomKilled,
      pidsLimitHit,
      ...(reason ? { reason } : {}),
      bytes: { stdout: out.bytes, stderr: err.bytes },
      lines: { stdout: out.lines, stderr: err.lines },
      durationMs: Math.round(performance.now() - started),
      logPath,
    };
    await this.deps.logs.writeMeta(logPath, {
      container: this.info.name,
      image: this.info.image,
      ...result,
      stdout: undefined,
      stderr: undefined,
    }).catch(() => undefined);
    return result;
  }

  private explain(f: { timedOut: boolean; canceled: boolean; oomKilled: boolean; pidsLimitHit: boolean; overlapped: boolean; timeoutMs: number; killReport?: string; logError?: string }): string | undefined {
    const parts: string[] = [];
    if (f.timedOut) parts.push(`timed out after ${f.timeoutMs} ms; its process tree was killed`);
    if (f.canceled) parts.push('canceled; its process tree was killed');
    if (f.oomKilled) parts.push(`killed by the memory limit (${Math.round(this.info.memoryBytes / 1024 ** 2)} MiB)`);
    if (f.pidsLimitHit) parts.push(`hit the process limit (${this.info.pidsLimit} processes): forks were refused`);
    if (f.overlapped && (f.oomKilled || f.pidsLimitHit)) {
      // The counters are the container's: a command running beside this one may be the one that hit the limit.
      parts.push('another command ran in this container at the same time, and the limit may have hit that one instead');
    }
    if (f.killReport && !f.killReport.startsWith('gone')) parts.push(`cleanup: ${f.killReport}`);
    if (f.logError) parts.push(`the full log could not be written (${f.logError})`);
    return parts.length ? parts.join('; ') : undefined;
  }

  /**
   * Runs a helper script and returns its stdout (small by construction). It runs as the
   * container's user: with a non-root user the engine gives execs no capabilities, so a
   * root helper could not signal the command's processes, while the same user can.
   */
  private async runHelper(script: string, args: string[]): Promise<{ exitCode: number | null; stdout: string }> {
    const chunks: Buffer[] = [];
    const s = await this.deps.engine.exec(this.id, { cmd: ['/bin/sh', '-c', script, 'sh', ...args] }, (stream, chunk) => {
      if (stream === 'stdout') chunks.push(Buffer.from(chunk));
    });
    const { exitCode } = await s.done;
    return { exitCode, stdout: Buffer.concat(chunks).toString('utf8') };
  }

  /**
   * Kills the tree of the process `pid` from a second exec. The engine has no call to kill
   * an exec'd process, so this is the only way that works in any image with /bin/sh.
   * Retried while the container's process limit refuses the helper itself.
   */
  private async killTree(pid: number, execMark: string): Promise<string> {
    let last = 'not run';
    for (let attempt = 0; attempt < 20; attempt++) {
      try {
        const r = await this.runHelper(KILL_TREE_SCRIPT, [String(pid), execMark]);
        last = r.stdout.trim() || `exit ${r.exitCode}`;
        if (r.exitCode === 0 && last.startsWith('gone')) return last;
      } catch (e) {
        last = e instanceof Error ? e.message : String(e);
        if (e instanceof SandboxError && e.code === 'CONTAINER_NOT_FOUND') return 'container gone';
      }
      await delay(100 + attempt * 50);
    }
    return last;
  }

  /** Reads the counters now and compares them with `before` (else with the last values read). */
  private async readLimitCounters(before?: Counters): Promise<{ oomKilled: boolean; pidsLimitHit: boolean }> {
    try {
      const r = await this.runHelper(CGROUP_COUNTERS_SCRIPT, []);
      const c = parseCounters(r.stdout);
      const base = before ?? this.counters;
      const oomKilled = c.oomKills !== undefined && c.oomKills > base.oomKills;
      const pidsLimitHit = c.pidsRefused !== undefined && c.pidsRefused > base.pidsRefused;
      this.counters = { oomKills: c.oomKills ?? this.counters.oomKills, pidsRefused: c.pidsRefused ?? this.counters.pidsRefused };
      return { oomKilled, pidsLimitHit };
    } catch {
      return { oomKilled: false, pidsLimitHit: false };
    }
  }

  private goneError(cause?: unknown, logPath?: string): SandboxError {
    return new SandboxError(
      'CONTAINER_NOT_FOUND',
      `Container ${this.info.name} is no longer running (stopped, removed, or past its expiry at ${this.info.expiresAt.toISOString()}). Start a new one.`,
      { cause, data: { containerId: this.id, ...(logPath ? { logPath } : {}) } },
    );
  }

  /** Stops (short grace) and removes the container. Safe to call twice or after it is gone. */
  stop(): Promise<void> {
    this.stopping ??= (async () => {
      this.stopped = true;
      try {
        const existed = await this.deps.engine.stopContainer(this.id, 1);
        if (existed) await this.deps.engine.removeContainer(this.id, true);
        this.deps.onStopped(this);
      } catch (e) {
        this.stopping = undefined; // let a later stop() try again (the exit hook still tracks it)
        throw e;
      }
    })();
    return this.stopping;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.stop();
  }
}

function delay(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms).unref());
}


