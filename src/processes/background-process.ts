import { PassThrough } from 'node:stream';
import type { ContainerEngine, ExecSession } from '../engine/container-engine.js';
import type { LogStore } from '../capture/log-store.js';
import { countNewlines, StreamWindow } from '../capture/stream-window.js';
import { CommandCapture } from '../commands/command-capture.js';
import type { ContainerHelpers } from '../commands/container-helpers.js';
import type { Counters } from '../commands/wrapper-protocol.js';
import { startWrappedExec } from '../commands/wrapped-exec.js';
import { swallowed } from '../debug.js';
import { SandboxError } from '../errors.js';
import { poll, systemClock, within, type Clock } from '../retry.js';
import { OutputLines } from './output-lines.js';

/** running: its exec's output is open; exited: it ended by itself; stopped: stopProcess or the container's end ended it. */
export type ProcessStatus = 'running' | 'exited' | 'stopped';

/** One background process as a list shows it. */
export interface ProcessInfo {
  processId: string;
  command: string;
  status: ProcessStatus;
  /** Once it has ended: its exit code (null when the engine could not tell). */
  exitCode?: number | null;
  startedAt: string;
  /** Lines of output so far. */
  lines: number;
  logPath: string;
}

/** New output of a process: the lines after the last read (or after `sinceLine`), capped like a command's. */
export interface ProcessOutput extends Omit<ProcessInfo, 'command' | 'startedAt' | 'lines'> {
  fromLine: number;
  toLine: number;
  output: string;
  /** Some of these lines are not in `output` (cut to the head and tail, or gone from memory): the log has them. */
  truncated?: true;
  /** Lines asked for that are no longer in memory (only in the log). */
  missed?: number;
}

/** What a process needs from its container. */
export interface ProcessDeps {
  engine: ContainerEngine;
  containerId: string;
  logs: LogStore;
  /** The answer's caps (exec.maxBytes, maxLines), as a command's. */
  limits: { maxBytes: number; maxLines: number };
  /** Bytes of output kept in memory for reads since a line. */
  windowBytes: number;
  clock?: Clock;
}

/**
 * Input written and not yet taken by the engine's connection (it waits in this process's
 * memory): a process that never reads its stdin would otherwise grow it by every write.
 */
export const MAX_PENDING_INPUT_BYTES = 1024 * 1024;

/** How long a killed process's output may take to close before we stop reading it. */
const STOP_DRAIN_MS = 5_000;

/**
 * A command left running: a wrapped exec of its own (never the kept shell), with the exec
 * mark every process it starts inherits, so the tree kill finds all of it (setsid and double
 * forks too); its stdin kept open for writeProcessInput; its output teed to a log of its own
 * (the log store's sinks and caps) and to a window of its last lines, numbered.
 */
export class BackgroundProcess {
  readonly capture: CommandCapture;
  readonly output: OutputLines;
  readonly startedAt = new Date();
  status: ProcessStatus = 'running';
  exitCode: number | null | undefined;
  /** The trailer's counters, once the output ended. */
  trailer: Counters | undefined;
  /** Resolves once its output has ended (by itself, by a stop, or with the container). */
  readonly ended: Promise<void>;
  /** The last line a read returned: the next read without sinceLine starts after it. */
  private readCursor = 0;
  private stopping = false;
  private readonly input = new PassThrough();
  private session: ExecSession | undefined;
  private endNow!: () => void;

  private constructor(
    private readonly deps: ProcessDeps,
    readonly processId: string,
    readonly command: string,
    readonly execMark: string,
  ) {
    this.capture = new CommandCapture(deps.logs, `bg-${processId}-${command.trim().split(/\s+/)[0] ?? 'cmd'}`, deps.limits);
    this.output = new OutputLines(deps.windowBytes);
    this.capture.tap = (chunk) => this.output.push(chunk);
    this.ended = new Promise((resolve) => (this.endNow = resolve));
  }

  /** Starts `command` in the container; resolves once the engine has started its exec. */
  static async start(
    deps: ProcessDeps,
    id: string,
    command: string | readonly string[],
    o: { execMark: string; workdir: string; env?: Record<string, string> },
  ): Promise<BackgroundProcess> {
    const text = typeof command === 'string' ? command : command.join(' ');
    const p = new BackgroundProcess(deps, id, text, o.execMark);
    try {
      // Its connection does not keep this process alive: a forgotten process ends with its container.
      p.session = await startWrappedExec(
        deps.engine,
        deps.containerId,
        command,
        { ...o, stdin: p.input, background: true },
        p.capture.onOutput,
      );
    } catch (e) {
      p.finish(null);
      throw e;
    }
    p.session.done.then(
      ({ exitCode }) => p.finish(exitCode),
      (e: unknown) => {
        swallowed(`the output of background process ${id}`, e);
        p.finish(null);
      },
    );
    return p;
  }

  get logPath(): string {
    return this.capture.logPath;
  }

  info(): ProcessInfo {
    return {
      processId: this.processId,
      command: this.command,
      status: this.status,
      ...(this.status !== 'running' ? { exitCode: this.exitCode ?? null } : {}),
      startedAt: this.startedAt.toISOString(),
      lines: this.output.lines,
      logPath: this.logPath,
    };
  }

  /** The output after line `sinceLine` (else after the last read), capped at the answer's limits; the read moves on. */
  read(sinceLine?: number): ProcessOutput {
    const r = this.output.since(sinceLine ?? this.readCursor);
    const window = new StreamWindow(this.deps.limits.maxBytes, this.deps.limits.maxLines);
    window.push(r.bytes);
    const shown = window.render(this.logPath);
    this.readCursor = Math.max(this.readCursor, r.toLine);
    return {
      processId: this.processId,
      status: this.status,
      ...(this.status !== 'running' ? { exitCode: this.exitCode ?? null } : {}),
      fromLine: r.fromLine,
      toLine: r.partial ? r.toLine + 1 : r.toLine,
      output: shown.text,
      ...(shown.truncated || r.missed ? { truncated: true as const } : {}),
      ...(r.missed ? { missed: r.missed } : {}),
      logPath: this.logPath,
    };
  }

  /** The first new line (after the last read) holding `text`, waiting up to `timeoutMs`; undefined when none came or the process ended. */
  async waitForText(text: string, timeoutMs: number): Promise<{ line: number; text: string } | undefined> {
    let seen = -1;
    const find = () => {
      // Nothing new since the last look: the window is not copied and searched again.
      if (this.output.totalBytes === seen) return undefined;
      seen = this.output.totalBytes;
      const r = this.output.since(this.readCursor);
      const at = r.bytes.indexOf(text);
      if (at === -1) return undefined;
      const lineStart = r.bytes.lastIndexOf(10, at) + 1;
      const lineEnd = r.bytes.indexOf(10, at);
      const line = r.fromLine + countNewlines(r.bytes.subarray(0, lineStart));
      return {
        line,
        text: r.bytes
          .subarray(lineStart, lineEnd === -1 ? undefined : lineEnd)
          .toString('utf8')
          .slice(0, 500),
      };
    };
    // Polled on the clock (retry.ts): the window is searched again only after new output or the end.
    const found = await poll(() => find() ?? (this.status === 'running' ? undefined : null), {
      timeoutMs,
      intervalMs: 100,
      clock: this.deps.clock ?? systemClock,
    });
    return found ?? undefined;
  }

  /**
   * Writes to its stdin (kept open since the start); `end` closes it after. `capped`: refused
   * past MAX_PENDING_INPUT_BYTES waiting (the first input given with the start is bounded by
   * the stdin option's own bound instead, and is never refused after its process started).
   */
  write(text: string | Buffer, end = false, capped = true): number {
    const bytes = Buffer.isBuffer(text) ? text : Buffer.from(text);
    const pending = this.input.writableLength + this.input.readableLength;
    if (capped && bytes.length > 0 && pending + bytes.length > MAX_PENDING_INPUT_BYTES)
      throw new SandboxError(
        'INVALID_ARGUMENT',
        `Process ${this.processId} has not read the ${pending} bytes of input written before, and no more than ${MAX_PENDING_INPUT_BYTES} may wait: let it read them first (readProcessOutput shows what it is doing), or stop it.`,
        { data: { processId: this.processId } },
      );
    this.input.write(bytes);
    if (end) this.input.end();
    return bytes.length;
  }

  /** Whether its stdin still takes input. */
  get inputOpen(): boolean {
    return !this.input.writableEnded && this.status === 'running';
  }

  /**
   * Kills its whole tree (kill-tree.sh: every process at or below its mark), then waits for
   * its output to end. `verified`: no marked process is left, or its exec ended.
   */
  async stop(helpers: ContainerHelpers): Promise<{ verified: boolean; report: string }> {
    if (this.status !== 'running') return { verified: true, report: `already ${this.status}` };
    this.stopping = true;
    const clock = this.deps.clock ?? systemClock;
    await within(this.capture.protocol.waitForPid(), 2_000, clock);
    const report = await helpers.killTree(this.execMark);
    this.input.end();
    const drained = await within(this.ended, STOP_DRAIN_MS, clock);
    if (!drained) {
      this.session?.detach();
      this.finish(null);
    }
    return { verified: report.startsWith('gone') || drained !== undefined, report };
  }

  /** The container is going: whatever still runs ends with it, as stopped. */
  containerEnding(): void {
    if (this.status === 'running') this.stopping = true;
    this.input.end();
  }

  private finish(exitCode: number | null): void {
    if (this.status !== 'running') return;
    this.status = this.stopping ? 'stopped' : 'exited';
    this.exitCode = exitCode;
    this.trailer = this.capture.finish();
    this.input.end();
    this.endNow();
  }
}
