/**
 * The framing between the kept shell (scripts/container/kept-shell.sh) and the host: the
 * request that carries one command, and the reading of the two streams the shell writes,
 * cut into one segment per command by markers that hold a nonce new for each command. See
 * the script's comment for the format.
 */

const EMPTY = Buffer.alloc(0);

/** The longest end frame on stdout after its marker: an exit code, a flag and a folder (PATH_MAX). */
export const MAX_END_FRAME_BYTES = 4096 + 32;

/** The request that runs `command` under `nonce`, exporting `marker` (NAME=value) to it. */
export function encodeRequest(nonce: string, marker: string, command: string): string {
  // One line per line of the command, each behind a `+` (the shell strips it): no byte of the
  // command is ever read as part of the protocol. A command cannot hold a NUL (the caller refuses it).
  const lines = command.split('\n');
  return `${nonce} ${marker} ${lines.length}\n${lines.map((l) => `+${l}\n`).join('')}`;
}

/**
 * Finds one marker in a stream of chunks: bytes before it are passed on as they come, except
 * a tail that could be the marker's start (at most its length less one), held back until the
 * next chunk says.
 */
export class MarkerScanner {
  private held: Buffer = EMPTY;

  constructor(private readonly marker: Buffer) {}

  /**
   * Passes on the bytes of `chunk` before the marker; returns the index in `chunk` just past
   * the marker, or -1 while it has not been seen (everything else was passed on or held).
   */
  push(chunk: Buffer, emit: (bytes: Buffer) => void): number {
    const m = this.marker;
    const heldLength = this.held.length;
    // Rare (a chunk that ended with what could open the marker): one copy of the next chunk.
    const data = heldLength ? Buffer.concat([this.held, chunk]) : chunk;
    this.held = EMPTY;
    const at = data.indexOf(m);
    if (at !== -1) {
      if (at > 0) emit(data.subarray(0, at));
      // The held bytes are shorter than the marker, so it ends inside `chunk`.
      return at + m.length - heldLength;
    }
    const cut = partialStart(data, m);
    if (cut > 0) emit(data.subarray(0, cut));
    // Copied: `chunk` may be a view into a reused read buffer.
    if (cut < data.length) this.held = Buffer.from(data.subarray(cut));
    return -1;
  }

  /** The bytes held back (the stream ended): they were not the marker. */
  flush(emit: (bytes: Buffer) => void): void {
    if (this.held.length) emit(this.held);
    this.held = EMPTY;
  }
}

/** Where a proper prefix of `marker` begins at the end of `buf`; `buf.length` when none does. */
function partialStart(buf: Buffer, marker: Buffer): number {
  const from = Math.max(0, buf.length - marker.length + 1);
  for (let i = buf.indexOf(marker[0]!, from); i !== -1; i = buf.indexOf(marker[0]!, i + 1)) {
    if (buf.subarray(i).equals(marker.subarray(0, buf.length - i))) return i;
  }
  return buf.length;
}

/** How a command's segment ended, from the end frame on stdout. */
export interface SegmentEnd {
  exitCode: number;
  /** The shell took on the command's folder and exports (false: it ended its subshell itself, or was killed). */
  stateKept: boolean;
  /** The shell's folder after the command. */
  folder: string;
}

type Phase = 'before' | 'body' | 'tail' | 'done';

/**
 * One command's two streams out of the shell's: what comes before its begin marker is not
 * its own (a process an earlier command left writing) and is dropped; its body goes to
 * `emit`; the end marker and (on stdout) the end frame close it.
 */
export class CommandSegment {
  private readonly phase: Record<'stdout' | 'stderr', Phase> = { stdout: 'before', stderr: 'before' };
  private readonly begin: Record<'stdout' | 'stderr', MarkerScanner>;
  private readonly end: Record<'stdout' | 'stderr', MarkerScanner>;
  private tail = '';
  /** Bytes dropped before the begin markers. */
  dropped = 0;
  result: SegmentEnd | undefined;

  constructor(
    readonly nonce: string,
    private readonly emit: (stream: 'stdout' | 'stderr', bytes: Buffer) => void,
    /** The end frame is not one the shell writes: the shell is not to be trusted any more. */
    private readonly onBroken: (why: string) => void,
  ) {
    const b = Buffer.from(`\x1f${nonce}b\x1f`, 'latin1');
    const e = Buffer.from(`\x1f${nonce}e\x1f`, 'latin1');
    this.begin = { stdout: new MarkerScanner(b), stderr: new MarkerScanner(b) };
    this.end = { stdout: new MarkerScanner(e), stderr: new MarkerScanner(e) };
  }

  /** The shell has begun the command (its begin mark came on either stream). */
  get begun(): boolean {
    return this.phase.stdout !== 'before' || this.phase.stderr !== 'before';
  }

  get complete(): boolean {
    return this.phase.stdout === 'done' && this.phase.stderr === 'done';
  }

  /** Takes a chunk of the shell's stream; returns true once both streams have ended this command. */
  push(stream: 'stdout' | 'stderr', chunk: Buffer): boolean {
    let rest = chunk;
    while (rest.length > 0) {
      const phase = this.phase[stream];
      if (phase === 'before') {
        const at = this.begin[stream].push(rest, (b) => (this.dropped += b.length));
        if (at === -1) break;
        this.phase[stream] = 'body';
        rest = rest.subarray(at);
      } else if (phase === 'body') {
        const at = this.end[stream].push(rest, (b) => this.emit(stream, b));
        if (at === -1) break;
        this.phase[stream] = stream === 'stdout' ? 'tail' : 'done';
        rest = rest.subarray(at);
      } else if (phase === 'tail') {
        rest = this.readTail(rest);
      } else {
        // After its end: only the shell's next command writes, after a new request.
        this.dropped += rest.length;
        break;
      }
    }
    return this.complete;
  }

  private readTail(chunk: Buffer): Buffer {
    const nul = chunk.indexOf(0);
    this.tail += chunk.toString('latin1', 0, nul === -1 ? chunk.length : nul);
    if (this.tail.length > MAX_END_FRAME_BYTES) {
      this.phase.stdout = 'done';
      this.onBroken(`its end frame passed ${MAX_END_FRAME_BYTES} bytes`);
      return Buffer.alloc(0);
    }
    if (nul === -1) return Buffer.alloc(0);
    this.phase.stdout = 'done';
    const m = /^(\d{1,3}):([01]):(\/[\s\S]*)$/.exec(this.tail);
    if (!m) this.onBroken(`its end frame was ${JSON.stringify(this.tail.slice(0, 80))}`);
    // The folder's bytes as the shell wrote them (latin1 kept them whole), read as UTF-8.
    else this.result = { exitCode: Number(m[1]), stateKept: m[2] === '1', folder: Buffer.from(m[3]!, 'latin1').toString('utf8') };
    return chunk.subarray(nul + 1);
  }

  /** The stream ended before the command did: held bytes go on as the command's. */
  flush(): void {
    for (const s of ['stdout', 'stderr'] as const) if (this.phase[s] === 'body') this.end[s].flush((b) => this.emit(s, b));
  }
}
