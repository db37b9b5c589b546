import { SandboxError } from '../errors.js';
import { poll, type Clock } from '../retry.js';
import type { ContainerEngine, ContainerState } from './container-engine.js';

/**
 * "Is the container gone?", decided here and nowhere else, and the one wording of the
 * CONTAINER_NOT_FOUND error that says so. The engine adapter, a sandbox's look after a
 * command ended by a signal, a helper's kill and the file mover all ask the same question
 * and must not answer it with different rules.
 */

/** What an inspect saw: the state; `undefined` when there is no such container; `null` when the engine could not be asked. */
export type SeenState = ContainerState | undefined | null;

/**
 * The rule: gone when the engine has no such container, or has it and it is not running
 * (stopped, killed, being removed). An engine that could not be asked has not said so.
 */
export function isGone(state: SeenState): boolean {
  return state === undefined || (state !== null && !state.running);
}

/** Whether an error says the container is gone (it was built by `containerGoneError`, or carries its code). */
export function isGoneError(e: unknown): e is SandboxError {
  return e instanceof SandboxError && e.code === 'CONTAINER_NOT_FOUND';
}

/**
 * The container's state, looked at until it is gone or `settleMs` have passed: a kill the
 * engine is still carrying out (docker kill, stop, rm -f) ends a container's processes
 * before the engine marks it as stopped. With no `settleMs`, one look. An inspect that
 * fails counts as "could not say", and is looked at again.
 */
export async function lookGone(
  engine: Pick<ContainerEngine, 'inspectContainer'>,
  containerId: string,
  o: { settleMs?: number; intervalMs?: number; clock?: Clock } = {},
): Promise<{ gone: boolean; state: SeenState; unanswered?: true }> {
  let state: SeenState = null;
  const verdict = await poll<'gone' | 'unanswered'>(
    async () => {
      // The engine's calls are bounded (bounded-engine.ts): one that got no answer says so.
      const seen = await engine
        .inspectContainer(containerId)
        .catch((e: unknown) => (isGoneError(e) && e.data.unanswered ? UNANSWERED : null));
      if (seen === UNANSWERED) return 'unanswered';
      state = seen;
      return isGone(state) ? 'gone' : undefined;
    },
    { timeoutMs: o.settleMs ?? 0, intervalMs: o.intervalMs ?? 50, ...(o.clock ? { clock: o.clock } : {}) },
  );
  return verdict === 'unanswered' ? { gone: true, state: null, unanswered: true } : { gone: verdict === 'gone', state };
}

/**
 * The CONTAINER_NOT_FOUND error, one shape whoever raises it: `Container <name> is no
 * longer running: <reason>. Start a new one.` (the reason says what is known: removed,
 * stopped from outside, past its expiry).
 */
export function containerGoneError(
  container: { id: string; name?: string },
  reason: string,
  o: { cause?: unknown; logPath?: string; unanswered?: true } = {},
): SandboxError {
  return new SandboxError(
    'CONTAINER_NOT_FOUND',
    `Container ${container.name ?? container.id.slice(0, 12)} is no longer running: ${reason}. Start a new one.`,
    {
      ...(o.cause !== undefined ? { cause: o.cause } : {}),
      data: { containerId: container.id, ...(o.logPath ? { logPath: o.logPath } : {}), ...(o.unanswered ? { unanswered: true } : {}) },
    },
  );
}

/**
 * How long one engine call about a container may take before the container counts as not
 * answering: a process in it that stops every other (`kill -STOP -1`) can freeze the runtime's
 * own process that sets up an exec, and the engine then holds its lock on the container (no
 * exec, inspect, kill or removal) for as long as the freeze lasts (its keep-alive is frozen too).
 */
export const UNANSWERED_MS = 15_000;
const UNANSWERED = Symbol('unanswered');

/** The reason said for such a container, from then on. */
export const UNANSWERED_REASON =
  "it stopped answering the engine (a call about it got no answer in 15 s: a process in it may have stopped the engine's own, and its keep-alive, with SIGSTOP); the engine cannot end it while that lasts: ending its processes on the host, or restarting the engine, does";

/** Why a container went away under a command we did not end: what its state says, else that it was removed. */
export function lostWhileRunning(state: ContainerState | undefined | null): string {
  return state
    ? `the container stopped while the command ran (${state.status}${state.exitCode !== null ? `, exit ${state.exitCode}` : ''}${state.oomKilled ? ', killed by the memory limit' : ''}): not by the timeout or a cancel: from outside (docker stop or kill), by an engine restart, or by a process in it that ended its keep-alive`
    : 'the container was removed while the command ran (from outside, or by an engine restart)';
}
