/**
 * Reading what the engine (through docker-modem) answered when it failed: its status, its
 * own message, and whether it means the container is simply gone.
 */

export interface EngineHttpError {
  statusCode?: number;
  code?: string;
  json?: { message?: string; cause?: string } | null;
  reason?: string;
  message?: string;
}

export function asHttpError(e: unknown): EngineHttpError {
  return typeof e === 'object' && e !== null ? (e as EngineHttpError) : { message: String(e) };
}

export const UNREACHABLE = new Set(['ENOENT', 'ECONNREFUSED', 'EACCES', 'ECONNRESET', 'EHOSTUNREACH', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND']);

/**
 * The engine's own words. docker-modem puts the body of an error answer into `json` for
 * ordinary requests but only into the message text for streamed ones (a pull): `(HTTP code
 * 500) server error - <the engine's message> `.
 */
export function engineMessage(e: EngineHttpError): string {
  const fromJson = e.json?.message;
  if (typeof fromJson === 'string' && fromJson.trim()) return fromJson.trim();
  const m = /^\(HTTP code \d+\) [^-]*- ([\s\S]*)$/.exec(e.message ?? '');
  const fromText = m?.[1]?.trim();
  if (fromText && fromText !== '[object Object]') return fromText;
  return e.message?.trim() || e.reason || 'unknown engine error';
}

/**
 * The engine answered that the container does not exist: the `undefined` state of
 * container-gone.ts's rule, read from an HTTP answer. Docker answers 404; Podman answers
 * 500 "no such container" for a container that its auto-removal is taking away at that moment.
 */
export function containerGone(e: EngineHttpError): boolean {
  if (e.statusCode === 404) return true;
  return e.statusCode === 500 && NO_SUCH_CONTAINER.test(`${e.json?.cause ?? ''} ${engineMessage(e)}`);
}

const NO_SUCH_CONTAINER = /no such container/i;
