import { swallowed } from '../debug.js';
import type { PullProgress } from './container-engine.js';

/** Longest line of pull progress we read; the engine's are a few hundred bytes. */
const MAX_PROGRESS_LINE = 1024 * 1024;

/**
 * Reads a pull's progress stream (one JSON object per line) to its end. Resolves with the
 * error the engine reported in the stream, if any. A line that is not JSON is skipped and
 * a stream error rejects: nothing the engine sends can throw outside this promise.
 */
export async function readPullProgress(
  ref: string,
  stream: NodeJS.ReadableStream,
  onProgress?: (p: PullProgress) => void,
): Promise<string | undefined> {
  let pending = '';
  let failed: string | undefined;
  const line = (text: string) => {
    let event: {
      id?: unknown;
      status?: unknown;
      error?: unknown;
      errorDetail?: { message?: unknown };
      progressDetail?: { current?: unknown; total?: unknown };
    };
    try {
      event = JSON.parse(text) as typeof event;
    } catch (e) {
      swallowed(`pull progress line that is not JSON: ${text.slice(0, 200)}`, e);
      return;
    }
    if (typeof event !== 'object' || event === null || Array.isArray(event)) return;
    const error =
      typeof event.errorDetail?.message === 'string'
        ? event.errorDetail.message
        : typeof event.error === 'string'
          ? event.error
          : undefined;
    if (error !== undefined) failed ??= error;
    const num = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);
    onProgress?.({
      id: typeof event.id === 'string' ? event.id : ref,
      status: typeof event.status === 'string' ? event.status : (error ?? ''),
      current: num(event.progressDetail?.current),
      total: num(event.progressDetail?.total),
    });
  };
  for await (const chunk of stream) {
    pending += typeof chunk === 'string' ? chunk : (chunk as Buffer).toString('utf8');
    let nl: number;
    while ((nl = pending.indexOf('\n')) !== -1) {
      line(pending.slice(0, nl).trim());
      pending = pending.slice(nl + 1);
    }
    if (pending.length > MAX_PROGRESS_LINE) pending = '';
  }
  if (pending.trim()) line(pending.trim());
  return failed;
}
