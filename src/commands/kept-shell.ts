import { randomBytes } from 'node:crypto';
import { PassThrough } from 'node:stream';
import type { ContainerEngine, ExecSession, StreamId } from '../engine/container-engine.js';
import { swallowed } from '../debug.js';
import { CommandSegment, encodeRequest, type SegmentEnd } from './kept-shell-frames.js';
import { KEPT_SHELL_SCRIPT } from './wrapper-protocol.js';
import { NestedMarks } from './exec-marks.js';

/**
 * One long-lived shell per container (scripts/container/kept-shell.sh) that runs the
 * container's commands one at a time, so that `cd` and `export` carry over as at a terminal,
 * and a command costs a line each way instead of an engine exec. Each command runs in a
 * subshell of it; its output is framed by a nonce (kept-shell-frames.ts) and reaches the
 * command's capture exactly as a wrapped exec's would (the same header and trailer on
 * stderr), so every guarantee of the one-exec path holds: caps, the log, the exit code, the
 * counters, the tree kill (from the header's pid).
 *
 * The shell's folder is kept here too: a shell that ended (killed by a command, by the disk
 * watch, or stuck after a kill) is replaced by a new one started in that folder, and the
 * next answer says the exported variables were lost.
 */

/** Everything the kept shell needs from its sandbox. */
export interface KeptShellDeps {
  engine: ContainerEngine;
  containerId: string;
  /** The container's working folder: where the first shell starts. */
  workdir: string;
  /** Kills every process of the exec marked `marker` (the helpers' tree kill): a shell stuck after a command's kill. */
  killMarked: (marker: string) => Promise<unknown>;
  /** A new exec mark (exec-marks.ts) for each shell process; its commands' marks are below it. */
  newMark: () => string;
}

/** What one command did to the shell: its folder when it changed, and what was lost, in a sentence. */
export interface ShellOutcome {
  folder?: string;
  note?: string;
}

/** One command in the kept shell: its session (as an exec's) and, once it is done, its outcome. */
export interface KeptRun {
  session: ExecSession;
  /** The command's mark, below its shell's (the shell it runs in now: one that ended before it read the command is replaced). */
  execMark(): string;
  outcome(): ShellOutcome;
}

interface InFlight {
  segment: CommandSegment;
  /** With `lost`: the shell's connection to the engine broke under the command (its answer is that error). */
  finish: (exitCode: number | null, lost?: unknown) => void;
}

/** One running shell process: an exec with requests on its stdin. */
class ShellProcess {
  readonly input = new PassThrough();
  readonly marker: string;
  /** Its commands' marks, below its own. */
  readonly commandMarks: NestedMarks;
  ended = false;
  endReason: string | undefined;
  current: InFlight | undefined;
  private session: ExecSession | undefined;
  readonly started: Promise<void>;

  constructor(deps: KeptShellDeps, workdir: string, onEnd: (p: ShellProcess, why: string, lost?: unknown) => void) {
    this.marker = deps.newMark();
    this.commandMarks = new NestedMarks(this.marker);
    const onOutput = (stream: StreamId, chunk: Buffer): void => {
      const c = this.current;
      if (!c) return swallowed(`output of the kept shell between commands (${chunk.length} bytes)`, undefined);
      if (c.segment.push(stream, chunk)) {
        this.current = undefined;
        c.finish(c.segment.result ? c.segment.result.exitCode : null);
      }
    };
    this.started = deps.engine
      .exec(
        deps.containerId,
        { cmd: ['/bin/sh', '-c', KEPT_SHELL_SCRIPT, 'kept-shell'], env: [this.marker], workdir, stdin: this.input, background: true },
        onOutput,
      )
      .then((session) => {
        this.session = session;
        if (this.ended) session.detach();
        session.done.then(
          ({ exitCode }) => onEnd(this, `ended (exit ${exitCode ?? 'unknown'})`),
          (e: unknown) => onEnd(this, `lost its connection (${e instanceof Error ? e.message : String(e)})`, e),
        );
      });
  }

  /**
   * Ends it: input closed, output no longer read. A command in flight ends with no exit code,
   * or, when the connection to the engine broke (`lost`), with that error, as a plain exec's would.
   */
  end(why: string, lost?: unknown): void {
    if (this.ended) return;
    this.ended = true;
    this.endReason = why;
    this.input.end();
    this.session?.detach();
    const c = this.current;
    this.current = undefined;
    if (c) {
      c.segment.flush();
      // The shell ended under the command: its own exit code is not the command's (unknown unless its frame ended).
      c.finish(c.segment.result ? c.segment.result.exitCode : null, c.segment.result ? undefined : lost);
    }
  }
}

/** Whether a command can run in the kept shell: shell text, with no stdin, environment or folder of its own. */
export function fitsKeptShell(
  command: string | readonly string[],
  o: { stdin?: unknown; env?: unknown; workdir?: unknown },
): command is string {
  return typeof command === 'string' && !command.includes('\0') && o.stdin === undefined && o.env === undefined && o.workdir === undefined;
}

export class KeptShell {
  private proc: ShellProcess | undefined;
  /** The shell's folder as its last command left it. */
  private folder: string;
  /** Why the last shell ended, until the next command's answer has said so. */
  private lostBecause: string | undefined;
  private stopped = false;

  constructor(private readonly deps: KeptShellDeps) {
    this.folder = deps.workdir;
  }

  /** A command runs in it now: a second command at the same time takes another way. */
  get busy(): boolean {
    return this.proc?.current !== undefined;
  }

  /** The shell's current folder (a plain exec beside it starts there too). */
  get currentFolder(): string {
    return this.folder;
  }

  /**
   * Runs `command` (shell text without NUL) in the shell, under a mark of its own below the
   * shell's; its output goes to `onOutput` as a wrapped exec's would. The caller has checked `busy`.
   */
  async run(command: string, onOutput: (stream: StreamId, data: Buffer) => void): Promise<KeptRun> {
    if (this.stopped) throw new Error('the kept shell was stopped');
    const before = this.folder;
    const notes: string[] = [];
    let end: SegmentEnd | undefined;
    let shellEnded: string | undefined;
    let proc: ShellProcess | undefined;
    let execMark = '';
    let resolveDone!: (r: { exitCode: number | null }) => void;
    let rejectDone!: (e: unknown) => void;
    const done = new Promise<{ exitCode: number | null }>((resolve, reject) => {
      resolveDone = resolve;
      rejectDone = reject;
    });
    const send = async (retried: boolean): Promise<void> => {
      const p = this.live();
      proc = p;
      execMark = p.commandMarks.mark(p.commandMarks.nextIndex());
      if (this.lostBecause)
        notes.push(`a new shell started (the last one ${this.lostBecause}): variables exported earlier are gone; the folder is kept`);
      this.lostBecause = undefined;
      const segment = new CommandSegment(randomBytes(16).toString('hex'), onOutput, (why) =>
        this.retire(p, `wrote a broken end frame (${why})`),
      );
      p.current = {
        segment,
        finish: (exitCode, lost) => {
          // The shell ended before it read the command (the disk limit's clean-up between
          // commands, say): it never ran, and goes to a new shell once.
          if (!segment.begun && !retried && !this.stopped) {
            send(true).catch(rejectDone);
            return;
          }
          end = segment.result;
          if (segment.dropped) swallowed(`output of the kept shell outside the command's frame (${segment.dropped} bytes)`, undefined);
          if (!end) shellEnded = p.endReason ?? 'ended';
          if (lost !== undefined) rejectDone(lost);
          else resolveDone({ exitCode });
        },
      };
      p.input.write(encodeRequest(segment.nonce, execMark, command));
      // A shell that cannot start (the folder it was in is gone) ends this command like a failed exec.
      await p.started.catch((e: unknown) => {
        this.retire(p, 'could not start');
        throw e;
      });
    };
    await send(false);
    const session: ExecSession = {
      done,
      // The command's output did not end after its tree was killed: the shell is stuck.
      detach: () => proc && this.retire(proc, 'was still busy after the command was killed'),
    };
    return {
      session,
      execMark: () => execMark,
      outcome: () => {
        if (end) {
          this.folder = end.folder;
          if (!end.stateKept)
            notes.push("this command's folder and variables were not kept (it was killed, or ran exec or its own EXIT trap)");
        } else notes.push(`the shell ${shellEnded ?? 'ended'} during this command: the next command starts a new one in ${this.folder}`);
        return { ...(this.folder !== before ? { folder: this.folder } : {}), ...(notes.length ? { note: `${notes.join('; ')}.` } : {}) };
      },
    };
  }

  /** Ends the shell for good (the container stops). */
  stop(): void {
    this.stopped = true;
    this.proc?.end('the container stopped');
    this.proc = undefined;
  }

  /** The running shell, or a new one in the last folder. */
  private live(): ShellProcess {
    if (this.proc && !this.proc.ended) return this.proc;
    const p = new ShellProcess(this.deps, this.folder, (ended, why, lost) => this.retire(ended, why, lost));
    // Caught here and thrown to the command that waits on it (run).
    p.started.catch((e: unknown) => swallowed('starting the kept shell', e));
    this.proc = p;
    return p;
  }

  /** Ends a shell that cannot be trusted with the next command; the next answer says why. */
  private retire(p: ShellProcess, why: string, lost?: unknown): void {
    if (p.ended) return;
    // Whatever of it is left (a stuck shell, its subshell) goes; a shell that ended has nothing left.
    if (!this.stopped) this.deps.killMarked(p.marker).catch((e: unknown) => swallowed('killing the kept shell', e));
    // Said before the end: a command the shell never read is sent to the next one at once.
    if (!this.stopped) this.lostBecause = why;
    if (this.proc === p) this.proc = undefined;
    p.end(why, lost);
    // A folder that no longer exists cannot hold the next shell: it starts in the container's.
    if (why === 'could not start') this.folder = this.deps.workdir;
  }
}
