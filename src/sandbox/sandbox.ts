import type { ExecSession } from '../engine/container-engine.js';
import { SandboxError } from '../errors.js';
import { CommandCapture } from '../commands/command-capture.js';
import { DiskWatch } from '../commands/disk-watch.js';
import { awaitCommandEnd, type CommandEnding } from '../commands/command-end.js';
import { execResult, limitsHit } from '../commands/exec-result.js';
import { ContainerHelpers } from '../commands/container-helpers.js';
import { ExecMarks } from '../commands/exec-marks.js';
import { fitsKeptShell, KeptShell, type KeptRun } from '../commands/kept-shell.js';
import {
  ContainerFiles,
  type EditFileResult,
  type ListDirectoryResult,
  type ReadFileResult,
  type WriteFileResult,
} from '../files/container-files.js';
import { validateExecOptions } from './option-schemas.js';
import type { ExecOptions, ExecResult } from '../commands/exec-types.js';
import { startWrappedExec, type WrappedExecOptions } from '../commands/wrapped-exec.js';
import { containerGoneError, isGoneError, lookGone, lostWhileRunning, UNANSWERED_MS, UNANSWERED_REASON } from '../engine/container-gone.js';
import { poll, systemClock, within, type Clock } from '../retry.js';
import { swallowed } from '../debug.js';
import { ProjectOverlayState } from './project-overlay-state.js';
import type { ProjectChanges } from '../project/project-changes.js';
import type { SandboxDeps, SandboxInfo } from './sandbox-types.js';
import { ProcessTable, type BackgroundExecOptions, type ProcessInfo, type ProcessStarted } from '../processes/process-table.js';

export { CANCELED_EXIT_CODE, TIMEOUT_EXIT_CODE } from '../commands/exec-result.js';
export { EXEC_MARK_VAR } from '../commands/exec-marks.js';

/** How long a container a command's SIGKILL or SIGTERM ended is looked at again before it counts as running. */
const LOST_SETTLE_MS = 300;

/** A command running in the sandbox now: whether another ran beside it. */
interface RunningSlot {
  overlapped: boolean;
}

export type { SandboxInfo } from './sandbox-types.js';

/** One started container: run commands in it, then stop it. `stop()` is idempotent. */
export class Sandbox implements AsyncDisposable {
  private stopped = false;
  /** Why the container is gone though we did not stop it (killed or removed from outside, an engine restart). */
  private lostBecause: string | undefined;
  private stopping: Promise<void> | undefined;
  /** The engine has removed the container: nothing in it can change the project any more. */
  private removed = false;
  /**
   * Commands whose process runs now (from its exec's start to its end), each with whether
   * another one ran beside it: the limit counters are the container's, so a limit hit then
   * cannot be pinned on one of them.
   */
  private readonly running = new Set<RunningSlot>();
  private readonly clock: Clock;

  private readonly helpers: ContainerHelpers;
  private readonly files: ContainerFiles;
  /** With a writable or scratch project: its overlay, applied after each command (rw) or thrown away (scratch). */
  private readonly overlay: ProjectOverlayState | undefined;
  /** Without a disk quota: the writable layer, measured for as long as the container lives (disk-watch.ts). */
  private readonly diskWatch: DiskWatch | undefined;
  /** The shell commands run in, one after another, keeping `cd` and `export` (unless exec.keptShell is false). */
  private readonly shell: KeptShell | undefined;
  /** Background processes (processes/): runCommand's background and yieldMs; the methods below delegate to it. */
  private readonly processes: ProcessTable;
  /** Each exec's mark (its limits, exec-marks.ts): what its kill takes. */
  private readonly marks = new ExecMarks();
  /** The processes that were still running when the container stopped. */
  stoppedProcesses: ProcessInfo[] = [];

  constructor(
    readonly info: Readonly<SandboxInfo>,
    private readonly deps: SandboxDeps<Sandbox>,
  ) {
    this.clock = deps.clock ?? systemClock;
    this.helpers = new ContainerHelpers(deps.engine, info.id, deps.clock);
    this.files = new ContainerFiles(deps.engine, info.id, info.workdir, deps.files, info.userIds);
    if (deps.exec.keptShell)
      this.shell = new KeptShell({
        engine: deps.engine,
        containerId: info.id,
        workdir: info.workdir,
        newMark: () => this.marks.next(),
        killMarked: (marker) => this.helpers.killTree(marker),
      });
    this.processes = new ProcessTable({
      ...deps,
      containerId: info.id,
      limits: deps.exec,
      helpers: this.helpers,
      newMark: () => this.marks.next(),
      folder: () => this.shell?.currentFolder ?? info.workdir,
      checkLive: () => this.checkLive(),
      info,
      diskLimitBytes: deps.disk.limitBytes,
    });
    const project = info.project;
    if (project && project.mount !== 'ro' && deps.overlay)
      this.overlay = new ProjectOverlayState(project.mount, project.hostRoot, project.containerRoot, deps.overlay, this.helpers);
    // A project overlay's upper folder is on the host's disk, where no quota of the engine
    // reaches: it counts against the limit whatever the engine enforces.
    const overlay = this.overlay;
    if (deps.disk.measured || overlay) {
      // Between commands the writer is whatever was left running: all of it is stopped.
      this.diskWatch = new DiskWatch(deps.engine, info.id, deps.disk.limitBytes, () => this.helpers.killLeftovers(), {
        layer: deps.disk.measured,
        ...(overlay ? { outside: () => overlay.upperBytes() } : {}),
      });
      this.diskWatch.start();
    }
  }

  /**
   * A range of lines of a text file in the working folder, capped (files.maxReadBytes,
   * maxReadLines), with the file's size and line count; a binary file is described, not returned.
   * @throws SandboxError POLICY_VIOLATION (a path or a symlink out of the working folder), FILE_OPERATION_FAILED, INVALID_ARGUMENT
   */
  readFile(...a: Parameters<ContainerFiles['readFile']>): Promise<ReadFileResult> {
    return this.fileOp(() => this.files.readFile(...a));
  }

  /** A file's exact bytes (up to files.maxWriteBytes). Same path rules as readFile. */
  readFileBytes(...a: Parameters<ContainerFiles['readFileBytes']>): Promise<Buffer> {
    return this.fileOp(() => this.files.readFileBytes(...a));
  }

  /** Writes a file (exact bytes; parent folders created). Same path rules as readFile. */
  writeFile(...a: Parameters<ContainerFiles['writeFile']>): Promise<WriteFileResult> {
    return this.fileOp(() => this.files.writeFile(...a), true);
  }

  /** Entries of a folder, with type and size, bounded in count and depth. Same path rules as readFile. */
  listDirectory(...a: Parameters<ContainerFiles['listDirectory']>): Promise<ListDirectoryResult> {
    return this.fileOp(() => this.files.listDirectory(...a));
  }

  /** Replaces exactly one occurrence of `oldText` in a text file. Same path rules as readFile. */
  editFile(...a: Parameters<ContainerFiles['editFile']>): Promise<EditFileResult> {
    return this.fileOp(() => this.files.editFile(...a), true);
  }

  /** A file operation on a live sandbox, after host edits reached the container; a write's changes applied to the project after it. */
  private async fileOp<T>(op: () => Promise<T>, writes = false): Promise<T> {
    this.checkLive();
    await this.overlay?.beforeUse();
    try {
      return await op();
    } finally {
      if (writes) this.overlay?.apply();
    }
  }

  private checkLive(): void {
    if (this.stopped || this.lostBecause) throw this.goneError();
  }

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
  async exec(command: string | readonly string[], options: BackgroundExecOptions): Promise<ExecResult | ProcessStarted>;
  async exec(command: string | readonly string[], options?: ExecOptions): Promise<ExecResult>;
  async exec(command: string | readonly string[], options: ExecOptions = {}): Promise<ExecResult | ProcessStarted> {
    const timeoutMs = validateExecOptions(options, this.deps.exec.timeoutMs);
    const commandText = typeof command === 'string' ? command : command.join(' ');
    if (commandText.trim() === '') throw new SandboxError('INVALID_ARGUMENT', 'The command is empty.');
    this.checkLive();
    // In the background, or until yieldMs: a wrapped exec of its own in the process table, never the kept shell.
    if (options.background || options.yieldMs !== undefined) return this.processes.run(command, options);
    if (options.signal?.aborted)
      throw new SandboxError('ABORTED', `Not started: the operation was aborted before "${commandText.slice(0, 80)}" ran.`);

    // The processes left running are being stopped for the disk limit: not this command's.
    if (this.diskWatch?.stopping) await this.diskWatch.stopping;
    this.checkLive();
    // The host's edits of files the container changed earlier, brought into its view first.
    await this.overlay?.beforeUse();
    const started = performance.now();
    const diskNotice = this.diskWatch?.takeNotice();
    const capture = new CommandCapture(this.deps.logs, options.label ?? commandText.trim().split(/\s+/)[0] ?? 'cmd', this.deps.exec);
    const slot = this.enterRunning();
    let ending: CommandEnding;
    let launched = false;
    let kept: KeptRun | undefined;
    try {
      // One command at a time in the kept shell; a second one beside it gets an exec of its own.
      if (this.shell && !this.shell.busy && fitsKeptShell(command, options)) kept = await this.shell.run(command, capture.onOutput);
      // Its limits, kept by everything the command starts (exec-marks.ts): what its kill takes.
      const ownMark = kept ? '' : this.marks.next();
      const execMark = kept ? kept.execMark : () => ownMark;
      const live =
        kept?.session ??
        (await startWrappedExec(this.deps.engine, this.id, command, { ...this.wrapped(options), execMark: ownMark }, capture.onOutput));
      launched = true;
      ending = await this.awaitEnd(live, capture, { timeoutMs, execMark, ...(options.signal ? { signal: options.signal } : {}) });
    } catch (e) {
      capture.finish();
      if (isGoneError(e)) throw this.goneError(e, capture.logPath);
      // The engine went away mid-command (a restart): the error says where the partial output is.
      if (launched && e instanceof SandboxError && !('logPath' in e.data)) {
        throw new SandboxError(e.code, e.message, { cause: e.cause ?? e, data: { ...e.data, logPath: capture.logPath } });
      }
      throw e;
    } finally {
      this.running.delete(slot);
    }
    const trailer = capture.finish();
    // A kill or a helper the engine never answered: the container is wedged; nothing more is asked of it.
    if (this.helpers.unanswered) this.lostBecause ??= `${UNANSWERED_REASON}; the partial output is in the log`;

    // Ended by a signal we did not send, or with no exit code: was the container itself stopped?
    if (!ending.interrupted && (ending.exitCode === null || ending.exitCode >= 128)) {
      if (this.stopped) throw this.goneError(undefined, capture.logPath);
      await this.checkLost(ending.exitCode);
    }
    const lost = this.lostBecause;
    const limits = lost
      ? { oomKilled: false, pidsLimitHit: false }
      : await limitsHit(this.helpers, capture.protocol.startCounters, capture.protocol.sawMark ? undefined : trailer, ending);
    const result = execResult(this.info, this.deps.disk.limitBytes, commandText, capture, ending, limits, {
      ...(lost ? { lost } : {}),
      ...(diskNotice ? { diskNotice } : {}),
      timeoutMs,
      overlapped: slot.overlapped,
      durationMs: performance.now() - started,
    });
    const shellOutcome = kept?.outcome();
    if (shellOutcome?.folder) result.folder = shellOutcome.folder;
    if (shellOutcome?.note) result.shell = shellOutcome.note;
    const notApplied = this.overlay?.apply();
    if (notApplied?.length) result.projectNotApplied = notApplied;
    // No log, no metadata: its path may not be a folder of ours (see LogStore).
    if (!capture.log.error) {
      await this.deps.logs
        .writeMeta(result.logPath, { container: this.info.name, image: this.info.image, ...result, stdout: undefined, stderr: undefined })
        .catch((e: unknown) => swallowed(`metadata of ${result.logPath}`, e));
    }
    return result;
  }

  /** Marks a command as running beside any others (the limit counters are the container's, shared). */
  private enterRunning(): RunningSlot {
    const slot = { overlapped: this.running.size > 0 };
    for (const other of this.running) other.overlapped = true;
    this.running.add(slot);
    return slot;
  }

  /** A plain command's folder (the kept shell's unless it names one), environment, and stdin as bytes. */
  private wrapped(o: ExecOptions): Omit<WrappedExecOptions, 'execMark'> {
    const stdin = o.stdin === undefined ? undefined : Buffer.isBuffer(o.stdin) ? o.stdin : Buffer.from(o.stdin);
    return {
      workdir: o.workdir ?? this.shell?.currentFolder ?? this.info.workdir,
      ...(o.env ? { env: o.env } : {}),
      ...(stdin ? { stdin } : {}),
    };
  }

  /** Waits for the command's output to end (command-end.ts); a timeout or an abort kills its tree (its mark's down-set). */
  private awaitEnd(
    live: ExecSession,
    capture: CommandCapture,
    o: { timeoutMs: number; execMark: () => string; signal?: AbortSignal },
  ): Promise<CommandEnding> {
    return awaitCommandEnd(live, capture, {
      timeoutMs: o.timeoutMs,
      execMark: o.execMark,
      helpers: this.helpers,
      diskWatch: this.diskWatch,
      diskLimitBytes: this.deps.disk.limitBytes,
      ...(o.signal ? { signal: o.signal } : {}),
    });
  }
  /**
   * After a command ended by a signal we did not send: if the container is not running any
   * more, it was stopped, killed or removed from outside (or the engine restarted). The
   * command's answer says so, and every later call is CONTAINER_NOT_FOUND.
   */
  private async checkLost(exitCode: number | null): Promise<void> {
    // docker kill, stop and rm -f end the command before the engine marks the container as stopped:
    // after SIGKILL, SIGTERM or a kept shell that ended under it (137, 143, null), look again (300 ms at most).
    const { gone, state, unanswered } = await lookGone(this.deps.engine, this.id, {
      settleMs: exitCode === null || exitCode === 137 || exitCode === 143 ? LOST_SETTLE_MS : 0,
      clock: this.clock,
    });
    if (!gone) return;
    this.lostBecause = `${unanswered ? UNANSWERED_REASON : lostWhileRunning(state)}; the partial output is in the log`;
  }

  /** The container's mount table (/proc/self/mountinfo), read with shell builtins. */
  mountTable(): Promise<string> {
    return this.helpers.mountTable();
  }

  private goneError(cause?: unknown, logPath?: string): SandboxError {
    return containerGoneError(
      { id: this.id, name: this.info.name },
      this.lostBecause
        ? this.lostBecause.replace(/; the partial output is in the log$/, '')
        : `stopped, removed, or past its expiry at ${this.info.expiresAt.toISOString()}`,
      { cause, ...(logPath ? { logPath } : {}), ...(this.helpers.unanswered ? { unanswered: true as const } : {}) },
    );
  }

  /**
   * Resolves when no command runs in this sandbox (a canceled one has had its tree killed
   * and its log closed), or after `timeoutMs`.
   */
  async whenIdle(timeoutMs: number): Promise<void> {
    await poll(() => (this.running.size === 0 ? true : undefined), { timeoutMs, intervalMs: 50, clock: this.clock });
  }

  /**
   * With a writable project mount: the project files created, changed or deleted since the
   * container started (capped lists, full counts). Undefined without one.
   */
  projectChanges(): Promise<ProjectChanges | undefined> {
    if (this.overlay && !this.stopped) this.overlay.apply();
    return Promise.resolve(this.overlay?.changes());
  }

  /** After the container is gone: the overlay applied (rw) or thrown away (scratch), synchronously (the exit hook). */
  settleOverlaySync(): void {
    this.overlay?.settle();
  }

  /**
   * Stops (short grace) and removes the container; a stop that fails falls back to a forced
   * removal, and only a failure of that is thrown. Safe to call twice or after it is gone.
   */
  stop(): Promise<void> {
    this.stopping ??= (async () => {
      this.stopped = true;
      this.diskWatch?.stop();
      this.shell?.stop();
      if (!this.stoppedProcesses.length) this.stoppedProcesses = this.processes.containerEnding();
      try {
        let existed = true;
        try {
          // A wedged container (its helpers got no answer) would only make the stop wait as long.
          const stopped = this.helpers.unanswered ? undefined : await within(this.deps.engine.stopContainer(this.id, 1), UNANSWERED_MS);
          existed = stopped ? stopped.value : true;
        } catch (e) {
          swallowed(`stopping ${this.info.name} (removing it by force instead)`, e);
        }
        // Bounded: a container the engine holds locked is said in the error; the engine cannot end it.
        if (existed && !(await within(this.deps.engine.removeContainer(this.id, true), UNANSWERED_MS)))
          throw containerGoneError({ id: this.id, name: this.info.name }, UNANSWERED_REASON, { unanswered: true });
        this.removed = true;
        // Nothing can write the upper folder any more: its last changes are applied now.
        this.overlay?.settle();
        this.deps.onStopped(this);
      } catch (e) {
        this.stopping = undefined; // let a later stop() try again (the exit hook still tracks it)
        throw e;
      }
    })();
    return this.stopping;
  }

  /** Background processes (processes/process-table.ts): they run until stopped, or until the container ends. */
  readonly startProcess: ProcessTable['start'] = (...a) => this.processes.start(...a);
  readonly readProcessOutput: ProcessTable['read'] = (...a) => this.processes.read(...a);
  readonly writeProcessInput: ProcessTable['write'] = (...a) => this.processes.write(...a);
  readonly stopProcess: ProcessTable['stop'] = (...a) => this.processes.stop(...a);
  readonly listProcesses: ProcessTable['list'] = () => this.processes.list();
  readonly waitForPort: ProcessTable['waitForPort'] = (...a) => this.processes.waitForPort(...a);
  readonly waitForOutput: ProcessTable['waitForOutput'] = (...a) => this.processes.waitForOutput(...a);

  async [Symbol.asyncDispose](): Promise<void> {
    await this.stop();
  }
}
