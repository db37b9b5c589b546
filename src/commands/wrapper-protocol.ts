import { readFileSync } from 'node:fs';

/**
 * The protocol between a command's wrapper in the container and the sandbox, in one place:
 * the shell that runs inside (scripts/container/*.sh, checked by shellcheck) and the
 * reading of what it writes.
 *
 * The wrapper (exec-wrapper.sh) writes on stderr, around the command's own output:
 *   header   \x1e<wrapper pid>:<oom kills>:<refused forks>\x1e   before the command's first byte
 *   trailer  \x1e<oom kills>:<refused forks>\x1e                    after its last byte
 * The pid is the process group of the command's tree (for a timeout's kill); the counters
 * before and after tell, with no extra exec, whether the command hit the memory or the
 * process limit. Two helpers run in a second exec: kill-tree.sh (a timeout or abort) and
 * read-counters.sh (a command killed before its trailer), which prints a trailer too.
 */

/** The byte that opens and closes the header and the trailer (ASCII record separator). */
export const MARK = 0x1e;

/** A container script, without its comment lines (they would travel with every exec). */
export function containerScript(name: string): string {
  const text = readFileSync(new URL(`../../scripts/container/${name}.sh`, import.meta.url), 'utf8');
  return text
    .split('\n')
    .filter((line) => line.trim() !== '' && !line.trimStart().startsWith('#'))
    .join('\n');
}

const COUNTERS = containerScript('counters');
/** Runs "$@" between the header and the trailer (sh -c WRAPPER sh <argv...>). */
const WRAPPER = `${COUNTERS}\n${containerScript('exec-wrapper')}`;
/** Kills the tree of a command: `sh -c KILL_TREE_SCRIPT sh <pid> <marker>`. */
export const KILL_TREE_SCRIPT = containerScript('kill-tree');
/** Prints the container's mount table (sandbox/mount-identity.ts reads it). */
export const MOUNTINFO_SCRIPT = containerScript('mountinfo');
/** Runs a snippet from stdin, killing what earlier ones left running: `sh -c RUN_CODE_SCRIPT run-code <python|bash>` (code/code-executor.ts). */
export const RUN_CODE_SCRIPT = containerScript('run-code');
/** Ends the container when its owner stops renewing its lease: `sh -c LEASE_WATCH_SCRIPT lease <file> <seconds> <every>`. */
export const LEASE_WATCH_SCRIPT = containerScript('lease-watch');
/** Removes files (never folders) the host deleted from the project: `sh -c REMOVE_FILES_SCRIPT sh <path>...` (container-helpers.ts). */
export const REMOVE_FILES_SCRIPT = containerScript('remove-files');
/** The kept shell, one per container (commands/kept-shell.ts): `sh -c KEPT_SHELL_SCRIPT kept-shell`, requests on stdin; its first line names it in a process list. */
export const KEPT_SHELL_SCRIPT = `: kept-shell\n${COUNTERS}\n${containerScript('kept-shell')}`;
/** Prints the container's TCP socket tables (/proc/net/tcp and tcp6) for a wait on a port (processes/listening-ports.ts). */
export const NET_TCP_SCRIPT = containerScript('net-tcp');
/** Prints the counters as a trailer on stdout. */
export const READ_COUNTERS_SCRIPT = `${COUNTERS}\n${containerScript('read-counters')}`;

/** The exec argv of a command: a shell command line (run by /bin/sh -c), or an argument vector run as is. */
export function wrapCommand(command: string | readonly string[]): string[] {
  const argv = typeof command === 'string' ? ['/bin/sh', '-c', command] : [...command];
  return ['/bin/sh', '-c', WRAPPER, 'sh', ...argv];
}

/** The command a wrapped argv runs (what wrapCommand was given), or undefined for another argv. */
export function unwrapCommand(cmd: readonly string[]): string | string[] | undefined {
  if (cmd[0] !== '/bin/sh' || cmd[1] !== '-c' || cmd[2] !== WRAPPER || cmd[3] !== 'sh') return undefined;
  const argv = cmd.slice(4);
  return argv[0] === '/bin/sh' && argv[1] === '-c' && argv.length === 3 ? argv[2] : argv;
}

export interface Counters {
  oomKills: number;
  pidsRefused: number;
}

/** Longest trailer `\x1e<n>:<n>\x1e` (two 12-digit numbers). */
const TRAILER_MAX = 28;
// eslint-disable-next-line no-control-regex -- \x1e is the protocol's mark
const TRAILER = /\x1e(\d{1,12}):(\d{1,12})\x1e$/;
const EMPTY = Buffer.alloc(0);

/** Parses a trailer at the very end of `text`; undefined when there is none. */
export function parseTrailer(text: Buffer | string): (Counters & { length: number }) | undefined {
  const m = TRAILER.exec(typeof text === 'string' ? text : text.toString('latin1'));
  return m ? { oomKills: Number(m[1]), pidsRefused: Number(m[2]), length: m[0].length } : undefined;
}

/**
 * Where a trailer (whole, or the start of one) begins at the end of `buf`; `buf.length`
 * when the end cannot be one, which is every ordinary chunk of stderr.
 */
function trailerStart(buf: Buffer): number {
  const n = buf.length;
  const last = buf.lastIndexOf(MARK);
  if (last === -1 || last < n - TRAILER_MAX) return n;
  if (last === n - 1) {
    // A closing mark: is there a whole trailer before it? Else it may open one.
    const open = buf.lastIndexOf(MARK, n - 2);
    // eslint-disable-next-line no-control-regex -- \x1e is the protocol's mark
    if (open !== -1 && open >= n - TRAILER_MAX && /^\x1e\d+:\d+\x1e$/.test(buf.toString('latin1', open))) return open;
    return last;
  }
  // eslint-disable-next-line no-control-regex -- \x1e is the protocol's mark
  return /^\x1e[\d:]*$/.test(buf.toString('latin1', last)) ? last : n;
}

/**
 * The stderr of a wrapped command, with the protocol taken out: `push` passes on the
 * command's own bytes, in order, holding back only bytes that could be the start of the
 * trailer (normally none); `end` passes on what was held and was not one, and returns the
 * trailer's counters. The header's pid and counters are available as soon as it is read.
 */
export class WrapperStderr {
  /** The wrapper's pid (the command's process group), once the header is read. */
  pid: number | undefined;
  /** The counters when the command started, from the header. */
  startCounters: Counters | undefined;
  /**
   * Whether the command's own stderr held the protocol's mark: then the trailer at the end
   * may be one the command wrote (a process it left behind can write after the real one),
   * and its counters are not to be trusted.
   */
  sawMark = false;
  private state: 'start' | 'digits' | 'done' = 'start';
  private digits = '';
  private waiters: Array<(pid: number | undefined) => void> = [];
  private held = EMPTY;

  push(data: Buffer, emit: (chunk: Buffer) => void): void {
    const chunk = this.state === 'done' ? data : this.readHeader(data);
    if (chunk.length === 0) return;
    const joined = this.held.length ? Buffer.concat([this.held, chunk]) : chunk;
    const cut = trailerStart(joined);
    if (cut > 0) {
      const own = joined.subarray(0, cut);
      if (own.includes(MARK)) this.sawMark = true;
      emit(own);
    }
    // Copied: `data` may be a view into a reused read buffer.
    this.held = cut < joined.length ? Buffer.from(joined.subarray(cut)) : EMPTY;
  }

  /** The end of the stream: what was held and is not the trailer goes on; the trailer's counters come back. */
  end(emit: (chunk: Buffer) => void): Counters | undefined {
    const trailer = parseTrailer(this.held);
    const rest = trailer ? this.held.subarray(0, this.held.length - trailer.length) : this.held;
    if (rest.includes(MARK)) this.sawMark = true;
    if (rest.length) emit(rest);
    this.held = EMPTY;
    this.endHeader(undefined);
    return trailer ? { oomKills: trailer.oomKills, pidsRefused: trailer.pidsRefused } : undefined;
  }

  /** The wrapper's pid once the header is read (undefined if the output had none). */
  waitForPid(): Promise<number | undefined> {
    return this.state === 'done' ? Promise.resolve(this.pid) : new Promise((r) => this.waiters.push(r));
  }

  /** Consumes header bytes from the start of `chunk`; returns the rest. */
  private readHeader(chunk: Buffer): Buffer {
    let i = 0;
    while (this.state !== 'done' && i < chunk.length) {
      const b = chunk[i]!;
      if (this.state === 'start') {
        if (b !== MARK) return (this.endHeader(undefined), chunk);
        this.state = 'digits';
      } else if (b === MARK && /^\d+(:\d+:\d+)?$/.test(this.digits)) {
        const [pid, oom, pids] = this.digits.split(':').map(Number);
        if (oom !== undefined && pids !== undefined) this.startCounters = { oomKills: oom, pidsRefused: pids };
        this.endHeader(pid);
      } else if (((b >= 0x30 && b <= 0x39) || b === 0x3a) && this.digits.length < 40) {
        this.digits += String.fromCharCode(b);
      } else {
        // Not our header after all: hand back what was held, then the rest.
        const held = Buffer.from(`\x1e${this.digits}`, 'latin1');
        this.endHeader(undefined);
        return Buffer.concat([held, chunk.subarray(i)]);
      }
      i++;
    }
    return i === 0 ? chunk : chunk.subarray(i);
  }

  private endHeader(pid: number | undefined): void {
    if (this.state === 'done') return;
    this.state = 'done';
    this.pid = pid;
    for (const w of this.waiters) w(pid);
    this.waiters = [];
  }
}
