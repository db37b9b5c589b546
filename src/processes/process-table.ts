import type { ContainerHelpers } from '../commands/container-helpers.js';
import { execResult, limitsHit } from '../commands/exec-result.js';
import type { ExecOptions, ExecResult } from '../commands/exec-types.js';
import { SandboxError } from '../errors.js';
import { poll, systemClock, within } from '../retry.js';
import { BackgroundProcess, type ProcessDeps, type ProcessInfo, type ProcessOutput, type ProcessStatus } from './background-process.js';
import { listeningSockets } from './listening-ports.js';

export type { ProcessInfo, ProcessOutput, ProcessStatus } from './background-process.js';

/** A command handed to the table: its handle, and what it printed so far. */
export interface ProcessStarted {
  processId: string;
  status: ProcessStatus;
  exitCode?: number | null;
  outputSoFar: string;
  logPath: string;
}

/** What the table needs from its sandbox. */
export interface ProcessTableDeps extends Omit<ProcessDeps, 'windowBytes'> {
  /** The answer's caps, and how many may run at once (exec.maxProcesses, 8 when unset). */
  limits: ProcessDeps['limits'] & { maxProcesses?: number };
  /** Bytes of each process's output kept in memory. @default PROCESS_WINDOW_BYTES */
  windowBytes?: number;
  helpers: ContainerHelpers;
  /** A new exec mark (exec-marks.ts) for each process. */
  newMark: () => string;
  /** Where a process starts when it names no folder: the kept shell's. */
  folder: () => string;
  /** Throws CONTAINER_NOT_FOUND once the container is stopped or lost. */
  checkLive: () => void;
  /** For the result of a command that ended within its yieldMs, as a command's. */
  info: { memoryBytes: number; pidsLimit: number };
  diskLimitBytes: number;
}

/** A command's options that hand it to the table: in the background at once, or past `yieldMs`. */
export type BackgroundExecOptions = ExecOptions & ({ background: true } | { yieldMs: number });

export interface ProcessRunOptions {
  env?: Record<string, string>;
  workdir?: string;
  /** Its first input; stdin stays open after it (writeProcessInput). */
  stdin?: string | Buffer;
}

/** Ended processes kept for a last read, the oldest dropped first. */
const MAX_ENDED_KEPT = 8;
/** Bytes of each process's output kept in memory for reads since a line. */
export const PROCESS_WINDOW_BYTES = 1024 * 1024;

/**
 * The background processes of one container: started, read, fed, waited on and stopped by
 * their id (p1, p2, ...), at most `maxProcesses` running at once. They live in the container:
 * its end ends them all (its stop lists them), so a process the model forgets never outlives it.
 */
export class ProcessTable {
  private readonly procs = new Map<string, BackgroundProcess>();
  private next = 1;
  /** Starts under way: counted against the limit before their exec exists, so two at once cannot pass it. */
  private starting = 0;

  constructor(private readonly deps: ProcessTableDeps) {}

  /** Starts `command` in the background and answers at once with its handle. */
  async start(command: string | readonly string[], o: ProcessRunOptions = {}): Promise<ProcessStarted> {
    return this.handle(await this.launch(command, o));
  }

  /**
   * Runs `command` as a background process and waits up to `yieldMs` for its end: a command
   * that ended by then answers as any command; one still running answers with its handle.
   */
  async run(command: string | readonly string[], o: ProcessRunOptions & { yieldMs?: number }): Promise<ExecResult | ProcessStarted> {
    const started = performance.now();
    const p = await this.launch(command, o);
    if (o.yieldMs === undefined) return this.handle(p);
    const ended = await within(p.ended, o.yieldMs, this.deps.clock ?? systemClock);
    if (!ended) return this.handle(p);
    // Ended within the wait: an ordinary command, its output summarized like any other.
    this.procs.delete(p.processId);
    const ending = { exitCode: p.exitCode ?? null, interrupted: undefined, killReport: undefined };
    const limits = await limitsHit(
      this.deps.helpers,
      p.capture.protocol.startCounters,
      p.capture.protocol.sawMark ? undefined : p.trailer,
      ending,
    );
    return execResult(this.deps.info, this.deps.diskLimitBytes, p.command, p.capture, ending, limits, {
      timeoutMs: o.yieldMs,
      overlapped: false,
      durationMs: performance.now() - started,
    });
  }

  /** New output of a process since its last read, or since line `sinceLine`. */
  read(processId: string, sinceLine?: number): ProcessOutput {
    return this.get(processId).read(sinceLine);
  }

  /** Writes `text` to a running process's stdin; `end` closes its input after it. */
  write(processId: string, text: string, end = false): { processId: string; bytes: number; status: ProcessStatus } {
    const p = this.get(processId);
    if (!p.inputOpen)
      throw new SandboxError(
        'INVALID_ARGUMENT',
        `Process ${processId} takes no more input: it is ${p.status === 'running' ? 'running with its input closed' : p.status}.`,
        {
          data: { processId },
        },
      );
    return { processId, bytes: p.write(text, end), status: p.status };
  }

  /** Stops a process's whole tree and says whether nothing of it is left. */
  async stop(processId: string): Promise<ProcessInfo & { verified: boolean; report?: string }> {
    const p = this.get(processId);
    const { verified, report } = await p.stop(this.deps.helpers);
    return { ...p.info(), verified, ...(verified ? {} : { report }) };
  }

  list(): ProcessInfo[] {
    return [...this.procs.values()].map((p) => p.info());
  }

  /** Waits for `text` (plain text, never a pattern a model could make slow) in a process's new output. */
  async waitForOutput(processId: string, text: string, timeoutMs: number): Promise<Record<string, unknown>> {
    const p = this.get(processId);
    const hit = await p.waitForText(text, timeoutMs);
    return hit
      ? { processId, found: true, line: hit.line, text: hit.text, status: p.status }
      : { processId, found: false, status: p.status, ...(p.status === 'running' ? { timedOut: true } : { exitCode: p.exitCode ?? null }) };
  }

  /** Waits until a socket in the container listens on `port` (read from /proc/net/tcp and tcp6: no tool needed in the image). */
  async waitForPort(port: number, timeoutMs: number): Promise<{ port: number; listening: boolean; address?: string; waitedMs: number }> {
    const clock = this.deps.clock ?? systemClock;
    const since = clock.now();
    const found = await poll(
      async () => {
        this.deps.checkLive();
        return listeningSockets(await this.deps.helpers.tcpTables()).find((s) => s.port === port);
      },
      { timeoutMs, intervalMs: (attempt) => Math.min(500, 50 * (attempt + 1)), clock },
    );
    return { port, listening: found !== undefined, ...(found ? { address: found.address } : {}), waitedMs: clock.now() - since };
  }

  private runningCount(): number {
    return [...this.procs.values()].filter((p) => p.status === 'running').length;
  }

  /** The container is going: the running processes end with it (stopped); returns them. */
  containerEnding(): ProcessInfo[] {
    const running = [...this.procs.values()].filter((p) => p.status === 'running');
    for (const p of running) p.containerEnding();
    return running.map((p) => ({ ...p.info(), status: 'stopped' as const }));
  }

  private async launch(command: string | readonly string[], o: ProcessRunOptions): Promise<BackgroundProcess> {
    this.deps.checkLive();
    const running = this.runningCount() + this.starting;
    if (running >= (this.deps.limits.maxProcesses ?? 8))
      throw new SandboxError(
        'INVALID_ARGUMENT',
        `This container already runs ${running} background processes, the most exec.maxProcesses allows: stop one (stopProcess) first.`,
      );
    this.forgetEnded();
    const id = `p${this.next++}`;
    this.starting++;
    try {
      const p = await BackgroundProcess.start({ ...this.deps, windowBytes: this.deps.windowBytes ?? PROCESS_WINDOW_BYTES }, id, command, {
        execMark: this.deps.newMark(),
        workdir: o.workdir ?? this.deps.folder(),
        ...(o.env ? { env: o.env } : {}),
      });
      if (o.stdin !== undefined && o.stdin.length > 0) p.write(o.stdin, false, false);
      this.procs.set(id, p);
      return p;
    } finally {
      this.starting--;
    }
  }

  private handle(p: BackgroundProcess): ProcessStarted {
    const r = p.read();
    return {
      processId: p.processId,
      status: p.status,
      ...(r.exitCode !== undefined ? { exitCode: r.exitCode } : {}),
      outputSoFar: r.output,
      logPath: p.logPath,
    };
  }

  private get(processId: string): BackgroundProcess {
    const p = this.procs.get(processId);
    if (p) return p;
    const known = [...this.procs.keys()];
    throw new SandboxError(
      'INVALID_ARGUMENT',
      `No background process ${JSON.stringify(processId)} in this container${known.length ? `; its processes: ${known.join(', ')}` : ''}.`,
      { data: { processId } },
    );
  }

  private forgetEnded(): void {
    const ended = [...this.procs.values()].filter((p) => p.status !== 'running');
    for (const p of ended.slice(0, Math.max(0, ended.length - MAX_ENDED_KEPT))) this.procs.delete(p.processId);
  }
}
