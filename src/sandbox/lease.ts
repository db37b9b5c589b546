import { utimesSync } from 'node:fs';
import type { ContainerEngine } from '../engine/container-engine.js';
import { swallowed } from '../debug.js';
import { LEASE_WATCH_SCRIPT } from '../commands/wrapper-protocol.js';

/**
 * The lease of a container whose project is an overlay (rw or scratch): a host file of ours,
 * bound read-only into the container, that this process touches while it lives; a watch in
 * the container (scripts/container/lease-watch.sh) ends the container when the file is older
 * than the lease. A plugin killed without its exit hook so leaves a container that stops
 * within minutes, not at its expiry hours later; the next sweep applies what it left
 * (overlay-orphans.ts). The container cannot renew it (the file is read-only there), only
 * end its watch, which leaves it to its expiry and to the sweep, as before.
 */

/** Where the lease file is in the container (outside the working folder). */
export const LEASE_IN_CONTAINER = '/.genaicode-docker-lease';
/** @default lease: 3 minutes, renewed every 30 s, looked at every 30 s. */
export const DEFAULT_LEASE_SECONDS = 180;

export class Lease {
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly file: string,
    private readonly seconds: number = DEFAULT_LEASE_SECONDS,
  ) {}

  /**
   * Renewed six times per lease while this process lives (the timer keeps nothing alive);
   * the watch is started in the container, tried twice: a container whose watch cannot start
   * is not started either (it could outlive its owner by hours).
   */
  async start(engine: ContainerEngine, containerId: string): Promise<void> {
    this.renew();
    this.timer = setInterval(() => this.renew(), (this.seconds * 1000) / 6);
    this.timer.unref();
    const every = String(Math.max(1, Math.floor(this.seconds / 6)));
    const spec = { cmd: ['/bin/sh', '-c', LEASE_WATCH_SCRIPT, 'lease', LEASE_IN_CONTAINER, String(this.seconds), every], background: true };
    let session;
    try {
      session = await engine.exec(containerId, spec, () => undefined);
    } catch (e) {
      swallowed('starting the lease watch (trying again)', e);
      session = await engine.exec(containerId, spec, () => undefined);
    }
    session.done.catch((e: unknown) => swallowed('the lease watch in the container', e));
  }

  private renew(): void {
    try {
      const now = new Date();
      utimesSync(this.file, now, now);
    } catch (e) {
      swallowed('renewing a container lease', e);
    }
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }
}
