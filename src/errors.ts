/**
 * The closed set of failure codes, each with what it means and what `data` holds. Each
 * names something a model or a person can act on. A command that exits non-zero is NOT an
 * error: it is a result (see ExecResult).
 */
export const ERROR_CODES = {
  ENGINE_UNAVAILABLE: 'No container engine answers; the message says how to start one. data: -',
  IMAGE_NOT_FOUND: 'The image is not present and cannot be pulled (no such image or tag, pulls off, or built locally only). data: image',
  IMAGE_PULL_FAILED: "The registry could not be reached or refused the pull, in the engine's words. data: image, status?",
  IMAGE_NOT_ALLOWED: 'The image is not on images.allow. data: image, allowed',
  POLICY_VIOLATION: 'A request or setting would break a security invariant. data: rule (a key of INVARIANTS)',
  INVALID_CONFIG: 'A configuration value is wrong or not allowed from its source. data: field?',
  INVALID_ARGUMENT: "A request's argument is malformed or out of bounds. data: the argument, when short (image, name, ...)",
  CONTAINER_NOT_FOUND: 'No such container in this session, or it is gone (stopped, removed, expired). data: containerId, logPath?',
  CONTAINER_START_FAILED: 'The container was created but did not start; it was removed again. data: -',
  ABORTED: 'The caller or the user canceled before the operation finished. data: -',
  ENGINE_ERROR: 'The engine answered with an error it should not give. data: status?',
  USER_DECLINED: 'The user said no when asked to start a container. data: -',
  FILE_OPERATION_FAILED:
    "A file inside a container could not be read, written or listed (no such file, a folder, a read-only file system, too large). data: path, reason ('not found' | 'wrong type' | 'cannot write' | 'too large' | 'failed')",
  INTERNAL_ERROR: 'A bug of this package: the message is what it threw. data: -',
} as const;

export type SandboxErrorCode = keyof typeof ERROR_CODES;

/** The codes, as a list. */
export const SANDBOX_ERROR_CODES = Object.keys(ERROR_CODES) as SandboxErrorCode[];

/** The one error class of this package: a code from a closed set, a sentence, and data. */
export class SandboxError extends Error {
  override readonly name = 'SandboxError';
  readonly code: SandboxErrorCode;
  readonly data: Readonly<Record<string, unknown>>;

  constructor(code: SandboxErrorCode, message: string, options: { data?: Record<string, unknown>; cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.data = Object.freeze({ ...(options.data ?? {}) });
  }

  /** The structured answer a model receives: `{ error, code, ...data }`. */
  toJSON(): { error: string; code: SandboxErrorCode } & Record<string, unknown> {
    return { error: this.message, code: this.code, ...this.data };
  }
}

export function isSandboxError(e: unknown): e is SandboxError {
  return e instanceof SandboxError;
}

/** Why a file operation failed: the `reason` of FILE_OPERATION_FAILED. */
export const FILE_OPERATION_REASONS = ['not found', 'wrong type', 'cannot write', 'too large', 'timed out', 'failed'] as const;
export type FileOperationReason = (typeof FILE_OPERATION_REASONS)[number];
