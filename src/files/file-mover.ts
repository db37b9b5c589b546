import { randomInt } from 'node:crypto';
import { PassThrough } from 'node:stream';
import type { ContainerEngine, ExecSession } from '../engine/container-engine.js';
import { SandboxError } from '../errors.js';
import { containerGoneError, lookGone } from '../engine/container-gone.js';
import { swallowed } from '../debug.js';
import { type Clock, systemClock } from '../retry.js';
import {
  AnswerReader,
  GREETING_ID,
  MAX_ANSWER_BYTES,
  type MoverAnswer,
  moverCommand,
  parseGreeting,
  requestLine,
} from './mover-protocol.js';

export type { MoverAnswer } from './mover-protocol.js';

/**
 * The mover of written files: one long-lived `file-op serve` in a container, as its user,
 * which moves a file the engine's archive API staged in the working folder into place,
 * with the checks and permissions of every other file operation (scripts/container/file-op.sh).
 *
 * Why a long-lived command: starting a command in a container costs the engine about 45 ms
 * (a runc exec), and takes the container's lock, which an archive extraction also takes.
 * A new command per write made `writeContainerFile` of 10 MB 1.2x to 1.3x `docker cp`;
 * asking a running one costs a line each way (bench/files.mjs, target 8).
 *
 * The mover is started at the first request and again after it has ended (the container
 * user can kill it, like every other process of its own; a command's timeout can take it
 * with the command's tree when it started after that command). A request in flight when it
 * ends is sent once more to a new one: the staged copy is still there unless it was moved.
 */

/** How long one request may take before the write is given up (and the mover replaced). */
const REQUEST_TIMEOUT_MS = 60_000;

/** Answers for no request a mover may give before it is given up (it never gives one). */
const MAX_UNASKED_ANSWERS = 3;

/** A failure of the mover, before it is tied to the path of the write it failed. */
class MoverFailure extends Error {
  constructor(
    message: string,
    readonly reason: 'failed' | 'timed out',
  ) {
    super(message);
  }
}

interface Waiter {
  resolve: (a: MoverAnswer) => void;
  reject: (e: Error) => void;
  timer: NodeJS.Timeout;
}

/** One running `file-op serve`. */
class MoverProcess {
  readonly ids: Promise<{ uid: number; gid: number }>;
  ended = false;
  private readonly input = new PassThrough();
  private readonly waiting = new Map<number, Waiter>();
  private stderr = '';
  private unasked = 0;
  private session: ExecSession | undefined;

  constructor(
    engine: ContainerEngine,
    containerId: string,
    workdir: string,
    private readonly onEnd: (p: MoverProcess) => void,
  ) {
    let greet!: Waiter;
    this.ids = new Promise<MoverAnswer>((resolve, reject) => {
      greet = { resolve, reject, timer: this.timeout(GREETING_ID) };
    }).then((a) => {
      const ids = parseGreeting(a.text);
      if (!ids) throw new MoverFailure(`The file mover in the container answered ${JSON.stringify(a.text)} for its user's ids.`, 'failed');
      return ids;
    });
    // Asked for only by the first write: a mover that fails before anyone asks is no unhandled rejection.
    this.ids.catch(() => undefined);
    this.waiting.set(GREETING_ID, greet);
    const reader = new AnswerReader(
      (id, answer) => this.answered(id, answer),
      () => this.end(this.endedError(`it answered more than ${MAX_ANSWER_BYTES} bytes without an end, which it never does`)),
    );
    // Its connection does not keep this process alive: a request waiting does (its timer).
    engine
      .exec(containerId, { cmd: moverCommand(workdir), stdin: this.input, background: true }, (stream, chunk) => {
        if (stream === 'stdout') reader.push(chunk);
        else if (this.stderr.length < 4096) this.stderr += chunk.toString('utf8');
      })
      .then((session) => {
        this.session = session;
        if (this.ended) session.detach();
        return session.done;
      })
      .then(
        ({ exitCode }) => this.end(this.endedError(`it ended (exit ${exitCode ?? 'unknown'})`)),
        (e: unknown) => this.end(e instanceof Error ? e : new Error(String(e))),
      );
  }

  /** Sends a request, a line (mover-protocol.ts). */
  request(request: { kind: 'place'; staged: string; path: string } | { kind: 'discard'; staged: string }): Promise<MoverAnswer> {
    if (this.ended) return Promise.reject(this.endedError('it had ended'));
    // Unguessable, not a count: a process of the container user can write requests into the
    // mover's input, and an answer to one of those must never be taken for ours.
    let id: number;
    do id = randomInt(1, 2 ** 47);
    while (this.waiting.has(id));
    return new Promise<MoverAnswer>((resolve, reject) => {
      this.waiting.set(id, { resolve, reject, timer: this.timeout(id) });
      this.input.write(requestLine({ ...request, id }));
    });
  }

  /** Ends it: its input is closed (it exits after the request in hand), and every request waiting fails. */
  end(reason: Error): void {
    if (!this.ended) {
      this.ended = true;
      this.input.end();
      this.session?.detach();
      this.onEnd(this);
    }
    for (const [id, w] of this.waiting) {
      clearTimeout(w.timer);
      this.waiting.delete(id);
      w.reject(reason);
    }
  }

  private answered(id: number, answer: MoverAnswer): void {
    const w = this.waiting.get(id);
    if (!w) {
      // Not ours: written into its output by a process of the container user. A few are
      // dropped; a stream of them (a NUL flood makes one every three bytes) ends this mover.
      if (++this.unasked > MAX_UNASKED_ANSWERS) this.end(this.endedError('answers nobody asked for were written into its output'));
      return;
    }
    clearTimeout(w.timer);
    this.waiting.delete(id);
    w.resolve(answer);
  }

  private timeout(id: number): NodeJS.Timeout {
    return setTimeout(() => {
      const w = this.waiting.get(id);
      if (!w) return;
      this.waiting.delete(id);
      w.reject(new MoverFailure(`The file mover in the container did not answer within ${REQUEST_TIMEOUT_MS / 1000} s.`, 'timed out'));
      // Whatever holds it holds the requests behind it too: the next one gets a new mover.
      this.end(this.endedError('it was given up'));
    }, REQUEST_TIMEOUT_MS);
  }

  private endedError(how: string): MoverEndedError {
    return new MoverEndedError(`The file mover in the container stopped: ${how}${this.stderr ? ` (${this.stderr.trim()})` : ''}.`);
  }
}

/** How long a container that ended the mover twice may still show as running while the engine stops it. */
const STOP_SETTLE_MS = 2_000;

/** The mover ended before answering: the request may be sent again to a new one. */
class MoverEndedError extends Error {}

export class FileMover {
  private current: MoverProcess | undefined;

  constructor(
    private readonly engine: ContainerEngine,
    private readonly containerId: string,
    private readonly workdir: string,
    /** The clock of the wait for a container stopping under a write (a unit test's own). */
    private readonly clock: Clock = systemClock,
  ) {}

  private process(): MoverProcess {
    if (!this.current || this.current.ended)
      this.current = new MoverProcess(this.engine, this.containerId, this.workdir, (p) => {
        if (this.current === p) this.current = undefined;
      });
    return this.current;
  }

  /** The numeric ids of the container's user (what staged files are owned by), for a write of `path` (as asked). */
  async userIds(path: string): Promise<{ uid: number; gid: number }> {
    return this.withRetry(path, (p) => p.ids);
  }

  /**
   * Moves `<workdir>/<staged>` to `target` (absolute), checked; the staged copy is gone after
   * it. `path` is the path as asked, what an error names.
   */
  place(staged: string, target: string, path: string = target): Promise<MoverAnswer> {
    return this.withRetry(path, (p) => p.request({ kind: 'place', staged, path: target }));
  }

  /** Removes a staged copy (a write of `path` that failed). */
  async discard(staged: string, path: string): Promise<void> {
    const a = await this.withRetry(path, (p) => p.request({ kind: 'discard', staged }));
    if (a.code !== 0) throw new Error(`removing ${staged}: exit ${a.code}`);
  }

  /**
   * A request the mover ended under is sent once more, to a new one; other errors are the
   * answer, about the write of `path`.
   */
  private async withRetry<T>(path: string, ask: (p: MoverProcess) => Promise<T>): Promise<T> {
    try {
      return await this.retried(ask);
    } catch (e) {
      if (!(e instanceof MoverFailure)) throw e;
      throw new SandboxError('FILE_OPERATION_FAILED', e.message, { cause: e, data: { path, reason: e.reason } });
    }
  }

  private async retried<T>(ask: (p: MoverProcess) => Promise<T>): Promise<T> {
    try {
      return await ask(this.process());
    } catch (e) {
      if (!(e instanceof MoverEndedError)) throw e;
      swallowed('the file mover ended; asking a new one', e);
      try {
        return await ask(this.process());
      } catch (again) {
        if (!(again instanceof MoverEndedError)) throw again;
        // Ended twice: most often because the container itself stopped under it. A kill the
        // engine is still carrying out can show the container running for a moment (seen
        // on a loaded machine): its state is asked again for a little while.
        if ((await lookGone(this.engine, this.containerId, { settleMs: STOP_SETTLE_MS, intervalMs: 100, clock: this.clock })).gone)
          throw containerGoneError({ id: this.containerId }, 'it stopped during the write', { cause: again });
        throw new MoverFailure(again.message, 'failed');
      }
    }
  }
}
