import { debuglog } from 'node:util';

/**
 * Debug output, off unless `NODE_DEBUG=genaicode-docker` (Node's own switch; no
 * dependency). It records what the package does at the GenAIcode boundary and every error
 * it handles by carrying on (a fallback, a best-effort step), which otherwise leaves no trace.
 */
export const debug = debuglog('genaicode-docker');

/** Records an error that is handled by carrying on, with where it happened. */
export function swallowed(where: string, e: unknown): void {
  debug('%s: %s', where, e instanceof Error ? e.message : String(e));
}
