import { swallowed } from '../debug.js';
import type { ContainerEngine } from '../engine/container-engine.js';

/** The longest wait between two looks while a command runs, or while the layer grows. */
const ACTIVE_CHECK_MS = 1000;
/** The shortest: a layer growing fast is looked at again before it could pass the limit. */
const MIN_CHECK_MS = 200;
/**
 * Between commands, a layer that does not grow is looked at as often as while a command runs:
 * a daemon left running may start writing at any moment, at the disk's full speed (a 2 s
 * pace let one write 1.7 GB past a 128 MiB limit here). Far from the limit, a slow look
 * still spaces them out (COST_SHARE).
 */
const IDLE_CHECK_MS = 1000;
/** A look costs the engine a walk of the writable layer: at most a tenth of its time goes to them (far from the limit). */
const COST_SHARE = 10;

/** What the layer did between commands, told to the next command's answer. */
export interface DiskNotice {
  usedBytes: number;
  /** What the clean-up of the processes left running said (`gone 3`), or why it could not run. */
  killReport: string;
}

/**
 * Measures a container's writable layer (the engine's SizeRw) for as long as the container
 * lives, where the storage driver has no quota, so the disk limit holds between commands
 * too. While a command runs, each look over the limit calls that command's `onOver` (its
 * tree is killed); between commands, the first look over it stops the writer (`stopWriter`:
 * every process left running) and keeps a notice for the next command's answer.
 *
 * How often: every second while a command runs; as soon as a growing layer could pass the
 * limit at the rate it grew (never sooner than 200 ms); between commands, a layer that does
 * not grow is looked at less often, up to every 2 s; and never more often than ten times
 * the time a look takes (a layer of many files costs the engine a walk of them).
 */
export class DiskWatch {
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  /** The layer was over the limit at the last look (the writer is stopped once per time it passes it). */
  private over = false;
  private last: { at: number; used: number } | undefined;
  private idleMs = ACTIVE_CHECK_MS;
  private readonly commands = new Set<(used: number) => void>();
  /**
   * Commands that started with the layer over the limit (told to the answer before): their first
   * look is their baseline. What it finds grown since the look before may have been written
   * before they started (a writer's last bytes before its kill), so it never kills them.
   */
  private readonly baselines = new Set<(used: number) => void>();
  private notice: DiskNotice | undefined;
  /** The writer being stopped now: a command waits for it (the clean-up would kill it too). */
  stopping: Promise<void> | undefined;

  constructor(
    private readonly engine: ContainerEngine,
    private readonly containerId: string,
    readonly limitBytes: number,
    private readonly stopWriter: () => Promise<string>,
    /**
     * What counts besides the engine's measure: `layer: false` where the engine enforces a
     * quota on the layer itself; `outside`, bytes the container writes elsewhere that no
     * quota sees (a project overlay's upper folder, on the host's disk).
     */
    private readonly counts: { layer: boolean; outside?: () => Promise<number> } = { layer: true },
  ) {}

  /** The bytes that count against the limit now; undefined when nothing could be measured. */
  private async usage(): Promise<number | undefined> {
    const [layer, outside] = await Promise.all([
      this.counts.layer ? this.engine.diskUsage(this.containerId) : Promise.resolve(0),
      this.counts.outside ? this.counts.outside() : Promise.resolve(0),
    ]);
    return layer === undefined ? (this.counts.outside ? outside : undefined) : layer + outside;
  }

  start(): void {
    this.schedule(ACTIVE_CHECK_MS);
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
  }

  /**
   * While a command runs: `onOver` is called at each look that finds the layer over the limit
   * and grown since the look before. Returns the function that ends it.
   */
  duringCommand(onOver: (usedBytes: number) => void): () => void {
    this.commands.add(onOver);
    if (this.over) this.baselines.add(onOver);
    // A command may write fast from its first moment: the next look comes within the active pace.
    if (!this.stopped && this.idleMs > ACTIVE_CHECK_MS) {
      this.idleMs = ACTIVE_CHECK_MS;
      this.schedule(ACTIVE_CHECK_MS);
    }
    return () => {
      this.commands.delete(onOver);
      this.baselines.delete(onOver);
    };
  }

  /** What happened between commands since the last call, once. */
  takeNotice(): DiskNotice | undefined {
    const n = this.notice;
    this.notice = undefined;
    return n;
  }

  /**
   * The layer's size now, outside the schedule (a command's end): it counts as a look, so
   * commands that follow one another closely cost one look each and no more.
   */
  async measure(): Promise<number | undefined> {
    const began = performance.now();
    const used = await this.usage();
    if (used !== undefined && !this.stopped) {
      // Found by the command's own answer: not told again as a between-commands excess.
      this.over = used > this.limitBytes;
      this.schedule(this.next(used, began));
    }
    return used;
  }

  private schedule(ms: number): void {
    clearTimeout(this.timer);
    if (this.stopped) return;
    this.timer = setTimeout(() => void this.look(), ms);
    // The watch never keeps the process alive: the container's expiry and the exit hook end it.
    this.timer.unref();
  }

  private async look(): Promise<void> {
    const began = performance.now();
    let used: number | undefined;
    try {
      used = await this.usage();
    } catch (e) {
      swallowed('measuring the writable layer', e);
    }
    if (this.stopped) return;
    const grew = used !== undefined && (this.last === undefined || used > this.last.used);
    const delay = this.next(used, began);
    if (used !== undefined) {
      this.act(used, grew);
      this.baselines.clear();
    }
    this.schedule(delay);
  }

  /** When to look next, after a look that began at `began`; the look is remembered. */
  private next(used: number | undefined, began: number): number {
    const now = performance.now();
    const took = now - began;
    // The engine's share is kept only while the layer is far from the limit: past half of it,
    // a slow look (a loaded machine, a layer of many files) must not leave a fast writer ten
    // looks' worth of time, so the next look comes as soon as the pace says, one look at a time.
    const share = used !== undefined && used * 2 >= this.limitBytes ? 1 : COST_SHARE;
    return Math.max(took * share, this.nextLookMs(used, now));
  }

  private act(used: number, grew: boolean): void {
    if (used <= this.limitBytes) {
      this.over = false;
      return;
    }
    const first = !this.over;
    this.over = true;
    if (this.commands.size > 0) {
      // Only while the layer grows: a command that removes files to get under the limit runs to its end.
      if (grew) for (const onOver of this.commands) if (!this.baselines.has(onOver)) onOver(used);
      return;
    }
    // Between commands: once when it passes the limit, and again while something still writes.
    if (!first && !grew) return;
    // Decided and begun in one step: a command that starts now waits for it (`stopping`).
    this.stopping = this.stopWriter().then(
      (killReport) => {
        // Nothing left to stop: bytes of a command that has ended (its own answer tells its
        // excess) or a writer's last ones, already told, seen late by this look. Not told again.
        if (killReport.trim() !== 'gone 0') this.notice = { usedBytes: used, killReport };
      },
      (e: unknown) => {
        this.notice = {
          usedBytes: used,
          killReport: `the processes left running could not be stopped: ${e instanceof Error ? e.message : String(e)}`,
        };
      },
    );
    void this.stopping.finally(() => (this.stopping = undefined));
  }

  private nextLookMs(used: number | undefined, now: number): number {
    const last = this.last;
    if (used === undefined) return this.commands.size ? ACTIVE_CHECK_MS : IDLE_CHECK_MS;
    this.last = { at: now, used };
    if (last && used > last.used && used < this.limitBytes) {
      // At the rate it grew, half the time it would take to reach the limit.
      const rate = (used - last.used) / Math.max(1, now - last.at);
      this.idleMs = ACTIVE_CHECK_MS;
      return Math.min(ACTIVE_CHECK_MS, Math.max(MIN_CHECK_MS, (this.limitBytes - used) / rate / 2));
    }
    if (this.commands.size) return ACTIVE_CHECK_MS;
    this.idleMs = Math.min(IDLE_CHECK_MS, Math.round(this.idleMs * 1.5));
    return this.idleMs;
  }
}
