import { randomInt } from 'node:crypto';

/**
 * The mark of an exec: a pair of hard limits no process can raise, so that a command's kill
 * finds everything the command started and nothing else, whatever its processes do.
 *
 * Without CAP_SYS_RESOURCE (our containers never have it) a hard resource limit can only be
 * lowered, and a child inherits its parent's. Each exec's shell lowers two limits nobody
 * uses for real, RLIMIT_RSS (no effect on Linux since 2.6) and RLIMIT_CPU (at about 10^9
 * seconds, in effect unlimited), to a pair (RSS_TOP - k, CPU_BASE + k) for a k of its own: every
 * process it starts stays in the down-set { rss <= RSS_TOP - k, cpu <= CPU_BASE + k }, and no
 * process of an exec j != k can be in it unless it lowers its own limits on purpose (which
 * harms only itself). The kill (scripts/container/kill-tree.sh) kills that down-set. The
 * container's init, its keep-alive and our helper execs keep the container's limits
 * (unlimited), above every pair.
 *
 * Execs of their own (a command, a background process, the kept shell) take k = i * STRIDE;
 * the kept shell's commands take, below the shell's k, (RSS_TOP - k - m, CPU_BASE + k - STRIDE + m)
 * for an m in [1, STRIDE): strictly below the shell in both (a command's kill never reaches
 * the shell), incomparable with each other and with every other exec's pair.
 *
 * The mark travels as the environment variable `GENAICODE_DOCKER_EXEC=<rss kB>:<cpu s>`,
 * which the wrapper and the kept shell read to lower their limits before they run anything;
 * the kill also takes a process that carries it but has not lowered its limits yet.
 */

/** Environment variable carrying an exec's mark (its pair) to the shell that applies it. */
export const EXEC_MARK_VAR = 'GENAICODE_DOCKER_EXEC';
/** RLIMIT_RSS of the highest pair, in kB (`ulimit -m` in dash and busybox): 1 PiB. */
const RSS_TOP_KB = 2 ** 40;
/** RLIMIT_CPU of the lowest pair, in seconds (`ulimit -t`): about 31 years of CPU time. */
const CPU_BASE_S = 1_000_000_000;
/** Room below each exec for the kept shell's commands. */
const STRIDE = 2 ** 12;
/** How many execs of their own a sandbox can mark (k = i * STRIDE, i in [1, SLOTS)). */
const SLOTS = 2 ** 20;
/**
 * Above every pair's CPU limit: a process whose limit is above it has not applied a mark.
 * (CPU_CEILING_S * 10^9 nanoseconds stays below 2^64: the kernel multiplies it so.)
 */
export const CPU_CEILING_S = CPU_BASE_S + STRIDE * SLOTS;

export interface MarkPair {
  rssKb: number;
  cpuSeconds: number;
}

function format(p: MarkPair): string {
  return `${EXEC_MARK_VAR}=${p.rssKb}:${p.cpuSeconds}`;
}

/** The pair a mark (`NAME=<rss kB>:<cpu s>`) stands for. */
export function parseMark(mark: string): MarkPair {
  const m = /=(\d+):(\d+)$/.exec(mark);
  if (!m) throw new Error(`not an exec mark: ${mark}`);
  return { rssKb: Number(m[1]), cpuSeconds: Number(m[2]) };
}

/** An index in [1, max) not in `used`, then recorded there: random first (no order to guess), then the next free one. */
function freeIndex(used: Set<number>, max: number, pick: (max: number) => number): number {
  let i = pick(max);
  while (used.has(i) || i < 1 || i >= max) i = i + 1 >= max ? 1 : i + 1;
  used.add(i);
  return i;
}

/**
 * The marks of one container's execs of their own: each new, never one used before in it (a
 * daemon a finished command left running keeps its pair, and a later kill of the same pair
 * would take it).
 */
export class ExecMarks {
  private readonly used = new Set<number>();

  constructor(private readonly pick: (max: number) => number = (max) => randomInt(1, max)) {}

  /** A mark for an exec of its own (a command, a background process, the kept shell). */
  next(): string {
    // A sandbox ends long before 2^20 execs.
    const i = freeIndex(this.used, SLOTS, this.pick);
    return format({ rssKb: RSS_TOP_KB - i * STRIDE, cpuSeconds: CPU_BASE_S + i * STRIDE });
  }
}

/**
 * The marks of the commands a kept shell (whose mark is `shell`) runs: below the shell's pair,
 * a new m for each while there are any left.
 */
export class NestedMarks {
  private readonly used = new Set<number>();
  private readonly k: number;

  constructor(
    shell: string,
    private readonly pick: (max: number) => number = (max) => randomInt(1, max),
  ) {
    this.k = parseMark(shell).cpuSeconds - CPU_BASE_S;
  }

  /** A new m in [1, STRIDE) (any once all were used: a reuse only risks a daemon of that old command). */
  nextIndex(): number {
    if (this.used.size >= STRIDE - 1) this.used.clear();
    return freeIndex(this.used, STRIDE, this.pick);
  }

  /** The mark of the shell's command m. */
  mark(m: number): string {
    return format({ rssKb: RSS_TOP_KB - this.k - m, cpuSeconds: CPU_BASE_S + this.k - STRIDE + m });
  }
}
