/**
 * The closed set of failure codes, each with what it means (the README's error list is
 * checked against it). Each names something a model or a person can act on. What `data`
 * holds for each code is a type, `ErrorData`: a call site that gives a code the wrong data
 * does not compile. A command that exits non-zero is NOT an error: it is a result (see
 * ExecResult).
 */
export const ERROR_CODES = {
  ENGINE_UNAVAILABLE: 'No container engine answers; the message says how to start one.',
  IMAGE_NOT_FOUND: 'The image is not present and cannot be pulled (no such image or tag, pulls off, or built locally only).',
  IMAGE_PULL_FAILED: "The registry could not be reached or refused the pull, in the engine's words.",
  IMAGE_NOT_ALLOWED: 'The image is not on images.allow.',
  POLICY_VIOLATION: 'A request or setting would break a security invariant.',
  INVALID_CONFIG: 'A configuration value is wrong or not allowed from its source.',
  INVALID_ARGUMENT: "A request's argument is malformed or out of bounds.",
  CONTAINER_NOT_FOUND: 'No such container in this session, or it is gone (stopped, removed, expired).',
  CONTAINER_START_FAILED: 'The container was created but did not start; it was removed again.',
  ABORTED: 'The caller or the user canceled before the operation finished.',
  ENGINE_ERROR: 'The engine answered with an error it should not give.',
  USER_DECLINED: 'The user said no when asked to start a container.',
  FILE_OPERATION_FAILED:
    'A file inside a container could not be read, written or listed (no such file, a folder, a read-only file system, too large, too slow).',
  INTERNAL_ERROR: 'A bug of this package: the message is what it threw.',
} as const;

export type SandboxErrorCode = keyof typeof ERROR_CODES;

/** The codes, as a list. */
export const SANDBOX_ERROR_CODES = Object.keys(ERROR_CODES) as SandboxErrorCode[];

/** Why a file operation failed: the `reason` of FILE_OPERATION_FAILED. */
export const FILE_OPERATION_REASONS = ['not found', 'wrong type', 'cannot write', 'too large', 'timed out', 'failed'] as const;
export type FileOperationReason = (typeof FILE_OPERATION_REASONS)[number];

/** What any error may carry: a failure that cut a command short says where its output is. */
export interface CommonErrorData {
  /** The full log of the command the failure ended. */
  logPath?: string;
}

/** What `data` holds for each code (spread into the model's answer beside `error` and `code`). */
export interface ErrorData {
  ENGINE_UNAVAILABLE: CommonErrorData;
  IMAGE_NOT_FOUND: CommonErrorData & { image: string; language?: string };
  IMAGE_PULL_FAILED: CommonErrorData & { image: string; /** The engine's HTTP status. */ status?: number };
  IMAGE_NOT_ALLOWED: CommonErrorData & { image: string; /** The patterns of images.allow in force. */ allowed: string[] };
  POLICY_VIOLATION: CommonErrorData & {
    /** A key of INVARIANTS (policy/policy.ts), or 'container path' and 'projectOverlay'. */
    rule: string;
    /** The path asked for, when the rule is about one. */
    path?: string;
  };
  INVALID_CONFIG: CommonErrorData & { /** The setting, as a dotted name. */ field?: string };
  /** The argument at fault, when it is short. */
  INVALID_ARGUMENT: CommonErrorData & {
    image?: string;
    language?: string;
    name?: string;
    tool?: string;
    endLine?: number;
    occurrences?: number;
    /** A background process of the container (processes/). */
    processId?: string;
  };
  CONTAINER_NOT_FOUND: CommonErrorData & {
    containerId: string;
    /** The engine gave no answer about it in time (a process in it froze the engine's own): the engine cannot end it while that lasts. */
    unanswered?: true;
  };
  CONTAINER_START_FAILED: CommonErrorData;
  ABORTED: CommonErrorData;
  ENGINE_ERROR: CommonErrorData & {
    status?: number;
    /** The storage driver has no disk quotas: the disk limit is measured instead. */
    noDiskQuota?: true;
  };
  USER_DECLINED: CommonErrorData;
  FILE_OPERATION_FAILED: CommonErrorData & {
    /** The path as it was asked for. */
    path: string;
    reason: FileOperationReason;
    status?: number;
  };
  INTERNAL_ERROR: CommonErrorData;
}

type KeysOfUnion<T> = T extends unknown ? keyof T : never;
type ValueOfUnion<T, K extends PropertyKey> = T extends unknown ? (K extends keyof T ? T[K] : never) : never;
/** The data of an error whose code is not known yet: every field of any code, each optional. */
export type AnyErrorData = { readonly [K in KeysOfUnion<ErrorData[SandboxErrorCode]>]?: ValueOfUnion<ErrorData[SandboxErrorCode], K> };

/**
 * The data of errors of `C`: its own type, and any other code's fields as optional ones, so
 * an error whose code is not narrowed yet can still be read (`e.data.rule`).
 */
export type DataOf<C extends SandboxErrorCode> = Readonly<ErrorData[C]> & AnyErrorData;

export interface SandboxErrorOptions<C extends SandboxErrorCode> {
  data?: ErrorData[C];
  cause?: unknown;
}

/** The options argument: required, with its data, for a code whose data has required fields. */
type OptionsArg<C extends SandboxErrorCode> = object extends ErrorData[C]
  ? [options?: SandboxErrorOptions<C>]
  : [options: SandboxErrorOptions<C> & { data: ErrorData[C] }];

/** The one error class of this package: a code from a closed set, a sentence, and data of that code's type. */
export class SandboxError<C extends SandboxErrorCode = SandboxErrorCode> extends Error {
  override readonly name = 'SandboxError';
  readonly code: C;
  readonly data: DataOf<C>;

  constructor(code: C, message: string, ...[options]: OptionsArg<C>) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.data = Object.freeze({ ...(options?.data ?? {}) }) as DataOf<C>;
  }

  /** The structured answer a model receives: `{ error, code, ...data }`. */
  toJSON(): { error: string; code: C } & DataOf<C> {
    return { error: this.message, code: this.code, ...this.data };
  }
}

/** Whether `e` is a SandboxError (of `code`, when given: its data is then that code's type). */
export function isSandboxError<C extends SandboxErrorCode = SandboxErrorCode>(e: unknown, code?: C): e is SandboxError<C> {
  return e instanceof SandboxError && (code === undefined || e.code === code);
}
