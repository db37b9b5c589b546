import type { ContainerEngine, PullProgress } from '../engine/container-engine.js';
import { swallowed } from '../debug.js';
import { SandboxError } from '../errors.js';
import { engineKey } from '../engine/engine-key.js';

interface Flight {
  done: Promise<void>;
  listeners: Set<(p: PullProgress) => void>;
  /** Waiters still waiting; when the last one leaves (aborted), the pull is aborted too. */
  waiters: number;
  /** Waiters that keep the process alive while they wait. */
  foreground: number;
  keepAlive: NodeJS.Timeout | undefined;
  controller: AbortController;
}

export interface PullRequest {
  onProgress?: (p: PullProgress) => void;
  /** Stops waiting (ABORTED); the pull itself goes on while another waiter waits for it. */
  signal?: AbortSignal;
  /**
   * A pull nobody waits on (the pre-pull at start-up): it never keeps the process alive. A
   * foreground waiter that joins it does, for as long as it waits.
   */
  background?: boolean;
}

/**
 * The pulls in flight, one per engine and image: a start that needs an image being pulled
 * (by the pre-pull or another start) waits for that pull instead of starting a second one,
 * and sees its progress from then on.
 */
export class PullFlights {
  private readonly flights = new Map<object | string, Map<string, Flight>>();

  /** Whether `image` is being pulled on this engine. */
  inFlight(engine: ContainerEngine, image: string): boolean {
    return this.flights.get(engineKey(engine))?.has(image) ?? false;
  }

  /**
   * Pulls `image`, or joins the pull of it already under way.
   * @throws what the pull throws (IMAGE_NOT_FOUND, IMAGE_PULL_FAILED, ENGINE_UNAVAILABLE), or ABORTED
   */
  async pull(engine: ContainerEngine, image: string, request: PullRequest = {}): Promise<void> {
    if (request.signal?.aborted) throw aborted(image);
    const key = engineKey(engine);
    let byImage = this.flights.get(key);
    if (!byImage) this.flights.set(key, (byImage = new Map()));
    let flight = byImage.get(image);
    if (!flight) {
      const controller = new AbortController();
      const listeners = new Set<(p: PullProgress) => void>();
      const images = byImage;
      const created: Flight = {
        listeners,
        waiters: 0,
        foreground: 0,
        keepAlive: undefined,
        controller,
        done: engine
          .pullImage(
            image,
            (p) => {
              for (const l of listeners) l(p);
            },
            controller.signal,
            { background: request.background === true },
          )
          .finally(() => {
            images.delete(image);
            if (images.size === 0) this.flights.delete(key);
            clearInterval(created.keepAlive);
          }),
      };
      // Each waiter gets the failure; a pull every waiter left must not be an unhandled rejection.
      created.done.catch((e: unknown) => swallowed(`pull of ${image}`, e));
      flight = created;
      byImage.set(image, flight);
    }
    await this.wait(flight, image, request);
  }

  private async wait(flight: Flight, image: string, request: PullRequest): Promise<void> {
    const { onProgress, signal } = request;
    if (onProgress) flight.listeners.add(onProgress);
    flight.waiters++;
    if (!request.background && flight.foreground++ === 0) {
      // The engine's socket of a background pull does not hold the process: this does while someone waits.
      flight.keepAlive = setInterval(() => undefined, 1 << 30);
    }
    let onAbort: (() => void) | undefined;
    try {
      await Promise.race([
        flight.done,
        new Promise<never>((_, reject) => {
          if (!signal) return;
          onAbort = () => reject(aborted(image));
          // Already aborted (while the pull was being set up): no event will come.
          if (signal.aborted) return onAbort();
          signal.addEventListener('abort', onAbort, { once: true });
        }),
      ]);
    } finally {
      if (onAbort) signal?.removeEventListener('abort', onAbort);
      if (onProgress) flight.listeners.delete(onProgress);
      if (!request.background && --flight.foreground === 0) {
        clearInterval(flight.keepAlive);
        flight.keepAlive = undefined;
      }
      // Nobody waits any more (each one aborted): the pull is not needed.
      if (--flight.waiters === 0) flight.controller.abort();
    }
  }
}

function aborted(image: string): SandboxError {
  return new SandboxError('ABORTED', `Pull of ${image} aborted.`);
}

/** The process's pulls in flight. */
export const pullFlights = new PullFlights();
