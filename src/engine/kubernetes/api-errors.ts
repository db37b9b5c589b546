import { SandboxError } from '../../errors.js';

/**
 * Reading what the API server (through client-node) answered when it failed. client-node
 * throws an ApiException whose `code` is the HTTP status and `body` the v1.Status; a request
 * that never reached the server fails with node-fetch's error, whose `code` is the socket's.
 */

interface ApiFailure {
  code?: number | string;
  body?: unknown;
  message?: string;
}

const UNREACHABLE = new Set(['ECONNREFUSED', 'ECONNRESET', 'EHOSTUNREACH', 'ETIMEDOUT', 'ENOTFOUND', 'EAI_AGAIN', 'EPIPE']);

function asFailure(e: unknown): ApiFailure {
  return typeof e === 'object' && e !== null ? (e as ApiFailure) : { message: String(e) };
}

/** The HTTP status of a failed call, if the server answered at all. */
export function apiStatus(e: unknown): number | undefined {
  const code = asFailure(e).code;
  return typeof code === 'number' ? code : undefined;
}

/** The server's own sentence from a v1.Status body. */
function serverMessage(f: ApiFailure): string {
  const body = typeof f.body === 'string' ? safeParse(f.body) : f.body;
  const message = (body as { message?: unknown } | undefined)?.message;
  return typeof message === 'string' && message ? message : (f.message ?? 'unknown error').split('\n')[0]!;
}

function safeParse(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return { message: text.slice(0, 500) };
  }
}

/** A failed API call as a SandboxError: the server unreachable gets a sentence on what to check. */
export function kubernetesFailure(e: unknown, context: string, server: string): SandboxError {
  if (e instanceof SandboxError) return e;
  const f = asFailure(e);
  const socketCode = typeof f.code === 'string' ? f.code : (f as { errno?: string }).errno;
  if (
    (socketCode && UNREACHABLE.has(socketCode)) ||
    (f.code === undefined && /ECONNREFUSED|ENOTFOUND|EHOSTUNREACH/.test(f.message ?? ''))
  ) {
    return new SandboxError(
      'ENGINE_UNAVAILABLE',
      `No Kubernetes API server answers at ${server} (${socketCode ?? f.message}). Point KUBECONFIG (or engine.kubernetes.kubeconfig and .context) at a cluster you can reach: \`kubectl version\` should answer.`,
      { cause: e },
    );
  }
  const status = apiStatus(e);
  return new SandboxError('ENGINE_ERROR', `${context}: ${serverMessage(f)}`, { cause: e, data: status ? { status } : {} });
}
