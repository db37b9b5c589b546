import type { ExecSession } from '../engine/container-engine.js';
import { swallowed } from '../debug.js';
import type { CommandCapture } from './command-capture.js';
import type { ContainerHelpers } from './container-helpers.js';
import type { DiskWatch } from './disk-watch.js';

/** How long a killed command's output may take to close before we stop reading it. */
const KILL_DRAIN_MS = 5_000;

/** How a command's output ended: its exit code (null when unknown), and whether we cut it short. */
export interface CommandEnding {
  exitCode: number | null;
  interrupted: 'timeout' | 'cancel' | 'disk' | undefined;
  /** The writable layer's size when the disk limit was found passed (while it ran, or at its end). */
  diskUsed?: number;
  /** What the tree kill found, when there was one. */
  killReport: string | undefined;
}

export interface CommandEndOptions {
  timeoutMs: number;
  /** The command's mark (exec-marks.ts) when it is killed: a kept shell's command may have moved to a new shell. */
  execMark: () => string;
  helpers: ContainerHelpers;
  /** Without a disk quota: the watch that measures the writes while the command runs. */
  diskWatch: DiskWatch | undefined;
  diskLimitBytes: number;
  signal?: AbortSignal;
}

/**
 * Waits for the command's output to end. A timeout or an abort kills its process tree
 * (then stops reading output that something outside the tree still holds open).
 */
export async function awaitCommandEnd(live: ExecSession, capture: CommandCapture, o: CommandEndOptions): Promise<CommandEnding> {
  let interrupted: 'timeout' | 'cancel' | 'disk' | undefined;
  let killReport: string | undefined;
  let killing: Promise<void> | undefined;
  let diskUsed: number | undefined;
  const interrupt = (why: 'timeout' | 'cancel' | 'disk') => {
    if (interrupted) return;
    interrupted = why;
    killing = (async () => {
      // The header comes after the mark is set: waited for (briefly), though the kill also
      // takes a shell that carries the mark and has not set it yet.
      await within(capture.protocol.waitForPid(), 2_000);
      killReport = await o.helpers.killTree(o.execMark());
      const drained = await within(
        live.done.then(
          () => true,
          () => true,
        ),
        KILL_DRAIN_MS,
      );
      if (!drained) live.detach();
    })();
  };
  const timer = setTimeout(() => interrupt('timeout'), o.timeoutMs);
  // Without a quota, the writes are measured while the command runs.
  const stopDiskWatch = o.diskWatch?.duringCommand((used) => {
    diskUsed = used;
    interrupt('disk');
  });
  const onAbort = () => interrupt('cancel');
  o.signal?.addEventListener('abort', onAbort, { once: true });
  // Aborted while the exec was being set up (seconds on a loaded engine): no event will come.
  if (o.signal?.aborted) interrupt('cancel');
  let exitCode: number | null;
  try {
    ({ exitCode } = await live.done);
  } catch (e) {
    // The output broke off: an error, unless we were killing the command anyway.
    if (!interrupted) throw e;
    exitCode = null;
  } finally {
    clearTimeout(timer);
    stopDiskWatch?.();
    o.signal?.removeEventListener('abort', onAbort);
  }
  if (killing) await killing;
  // A write faster than the watch's next look (fallocate, a quick dd) is measured once at
  // the end (one inspect: a few ms for a typical writable layer). After a kill too: what the
  // tree wrote while it died is then the watch's last look, and a clean-up that follows
  // (`rm`, shrinking the layer) is not taken for a writer.
  if (o.diskWatch) {
    const used = await o.diskWatch.measure().catch((e: unknown) => swallowed('measuring the writable layer after a command', e));
    if (!interrupted && used !== undefined && used > o.diskLimitBytes) diskUsed = used;
  }
  return { exitCode, interrupted, killReport, ...(diskUsed !== undefined ? { diskUsed } : {}) };
}

/**
 * `p`'s value, or undefined after `ms`. Not a wait of its own but a bound on one: its timer
 * is cleared as soon as `p` settles, so nothing lingers (a clock's sleep cannot be cleared).
 */
function within<T>(p: Promise<T>, ms: number): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<undefined>((r) => (timer = setTimeout(() => r(undefined), ms)));
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
}
