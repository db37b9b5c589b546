import { swallowed } from '../debug.js';

/**
 * Removes this process's containers however the process ends: normal exit,
 * process.exit(), an uncaught exception or unhandled rejection (all reach 'exit'), and
 * SIGINT, SIGTERM and SIGHUP. Installed once per process, on the first container.
 *
 * 'exit' handlers cannot wait for asynchronous work, so removal there is synchronous
 * (the engine adapter's removeContainersSync). For a signal nobody else handles, we clean
 * up and then re-raise it, so the process ends as it would have (same signal). If the host
 * application handles the signal itself (genaicode uses SIGINT to interrupt), we leave the
 * decision to it: if it exits, 'exit' still cleans up.
 */

interface ExitCleanup {
  /** Synchronous, best effort: remove everything still live. */
  removeAllSync(): void;
  /** Asynchronous variant, bounded by a timeout, used on signals. */
  removeAll(): Promise<void>;
}

const SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;
const registered = new Set<ExitCleanup>();
let installed = false;

export function registerExitCleanup(c: ExitCleanup): () => void {
  registered.add(c);
  install();
  return () => registered.delete(c);
}

function runSync(): void {
  for (const c of registered) {
    try {
      c.removeAllSync();
    } catch (e) {
      // best effort: nothing can be reported to the user while exiting
      swallowed('exit hook', e);
    }
  }
}

function install(): void {
  if (installed) return;
  installed = true;
  process.on('exit', runSync);
  for (const sig of SIGNALS) {
    const handler = () => {
      const othersListen = process.listenerCount(sig) > 1;
      if (othersListen) return;
      process.removeListener(sig, handler);
      const timeout = new Promise<void>((r) => setTimeout(r, 10_000).unref());
      void Promise.race([Promise.allSettled([...registered].map((c) => c.removeAll())), timeout]).finally(() => {
        runSync(); // anything the asynchronous pass missed
        process.kill(process.pid, sig);
      });
    };
    process.on(sig, handler);
  }
}
