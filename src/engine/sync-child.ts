import { spawnSync } from 'node:child_process';
import { swallowed } from '../debug.js';

/**
 * Runs a child Node process synchronously, for a process that is exiting: `payload` goes to
 * its stdin as JSON, and it answers on stdout with the JSON list of the ids it could not
 * handle. Best effort within `timeoutMs`: a child that answers anything else (or nothing)
 * leaves every id unhandled. `what` names the child in the debug log.
 */
export function idsLeftBySyncChild(args: string[], payload: object, ids: string[], timeoutMs: number, what: string): string[] {
  const r = spawnSync(process.execPath, args, {
    input: JSON.stringify(payload),
    timeout: timeoutMs,
    encoding: 'utf8',
    stdio: ['pipe', 'pipe', 'ignore'],
  });
  try {
    return JSON.parse(r.stdout) as string[];
  } catch (e) {
    swallowed(`${what} answered ${JSON.stringify(r.stdout.slice(0, 200))}`, e);
    return ids;
  }
}
