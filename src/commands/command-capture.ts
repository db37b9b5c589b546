import type { StreamId } from '../engine/container-engine.js';
import type { LogSink, LogStore } from '../capture/log-store.js';
import { StreamWindow } from '../capture/stream-window.js';
import { type Counters, WrapperStderr } from './wrapper-protocol.js';

/**
 * Everything one command's output goes to: its full log on disk, and bounded windows of
 * stdout and stderr for the answer. Stderr passes through the wrapper protocol first, so
 * the header and the trailer reach neither the log nor the windows.
 */
export class CommandCapture {
  readonly log: LogSink;
  readonly stdout: StreamWindow;
  readonly stderr: StreamWindow;
  readonly protocol = new WrapperStderr();
  /** Also given every byte of the command's own output, in arrival order (a background process's line window). */
  tap: ((chunk: Buffer) => void) | undefined;

  constructor(logs: LogStore, label: string, limits: { maxBytes: number; maxLines: number }) {
    // A log that cannot be written (disk full, a folder that is not ours) does not stop the
    // command: the result says the log is incomplete (log.error).
    this.log = logs.create(label);
    this.stdout = new StreamWindow(limits.maxBytes, limits.maxLines);
    this.stderr = new StreamWindow(limits.maxBytes, limits.maxLines);
  }

  get logPath(): string {
    return this.log.path;
  }

  /** The engine's output callback: `data` is valid only during the call (a view into a reused buffer). */
  readonly onOutput = (stream: StreamId, data: Buffer): void => {
    if (stream === 'stdout') this.take(this.stdout, data);
    else this.protocol.push(data, this.takeStderr);
  };

  /** The output has ended: what stderr held back goes on, the log closes. Returns the trailer's counters. */
  finish(): Counters | undefined {
    const trailer = this.protocol.end(this.takeStderr);
    this.log.end();
    return trailer;
  }

  private readonly takeStderr = (chunk: Buffer): void => this.take(this.stderr, chunk);

  private take(window: StreamWindow, chunk: Buffer): void {
    window.push(chunk);
    this.tap?.(chunk);
    // A synchronous write: while it runs no more output is read, which is the backpressure.
    this.log.write(chunk);
  }
}
