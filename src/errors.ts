/**
 * The closed set of failure codes. Each names something a model or a person can act on.
 * A command that exits non-zero is NOT an error: it is a result (see ExecResult).
 */
export const SANDBOX_ERROR_CODES = [
  'ENGINE_UNAVAILABLE',
  'IMAGE_NOT_FOUND',
  'IMAGE_PULL_FAILED',
  'IMAGE_NOT_ALLOWED',
  'POLICY_VIOLATION',
  'INVALID_CONFIG',
  'INVALID_ARGUMENT',
  'CONTAINER_NOT_FOUND',
  'CONTAINER_START_FAILED',
  'EXEC_FAILED',
  'ABORTED',
  'ENGINE_ERROR',
] as const;

export type SandboxErrorCode = (typeof SANDBOX_ERROR_CODES)[number];

/** The one error class of this package: a code from a closed set, a sentence, and data. */
export class SandboxError extends Error {
  override readonly name = 'SandboxError';
  readonly code: SandboxErrorCode;
  readonly data: Readonly<Record<string, unknown>>;

  constructor(
    code: SandboxErrorCode,
    message: string,
    options: { data?: Record<string, unknown>; cause?: unknown } = {},
  ) {
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
