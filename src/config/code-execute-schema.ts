import { z } from 'zod';
import { NETWORK_MODES } from '../policy/policy.js';
import { BOUNDS, byteSize } from './config-values.js';

/** codeExecute's image: Python 3, bash and curl (docker/sandbox-python). */
export const CODE_IMAGE = 'genaicode-docker/sandbox-python:latest';

/**
 * codeExecute: Python and bash snippets in a sandbox of their own profile (docs/tools/code-execute.md).
 * The root filesystem is always read-only; privileged mode, the engine socket, the host's
 * network and PID namespace are never possible (there is no setting for them).
 */
export const CodeExecuteSchema = z
  .object({
    /** Offer the codeExecute action to the model. @default true */
    enabled: z.boolean().default(true),
    /** Image with python3, bash and curl. @default genaicode-docker/sandbox-python:latest */
    image: z.string().min(1).default(CODE_IMAGE),
    /** One container reused across calls (true), or a fresh one per call (false). @default true */
    keepAlive: z.boolean().default(true),
    /** A kept-alive container is replaced after this many calls. @default 50 */
    maxExecutions: z.number().int().min(1).max(100_000).default(50),
    /** ... or after this many minutes without a call. @default 10 */
    idleTimeoutMinutes: z
      .number()
      .min(0.05)
      .max(7 * 24 * 60)
      .default(10),
    /** Default time limit of one call, in seconds: the whole call is killed at it. @default 30 */
    timeoutSeconds: z.number().int().min(BOUNDS.codeTimeoutSeconds.min).max(BOUNDS.codeTimeoutSeconds.max).default(30),
    /** The most a call may ask for (timeoutSeconds argument). @default 300 */
    maxTimeoutSeconds: z.number().int().min(BOUNDS.codeTimeoutSeconds.min).max(BOUNDS.codeTimeoutSeconds.max).default(300),
    /** Memory limit. @default 256m */
    memory: byteSize(BOUNDS.memoryBytes.min, BOUNDS.memoryBytes.max).default('256m'),
    /** CPUs. @default 1 */
    cpus: z.number().min(BOUNDS.cpus.min).max(BOUNDS.cpus.max).default(1),
    /** Maximum number of processes. @default 128 */
    pids: z.number().int().min(BOUNDS.pids.min).max(BOUNDS.pids.max).default(128),
    /** Size of the tmpfs at /tmp (and at the working folder). @default 64m */
    tmpfsSize: byteSize(1024 ** 2, 4 * 1024 ** 3).default('64m'),
    /** 'none' (loopback only) or 'bridge'. @default none */
    network: z.enum(NETWORK_MODES).default('none'),
    /**
     * Host folders mounted into every code sandbox, each within `mountAllow`: e.g. a
     * `skills` folder read-only at /skills and an output folder writable at /output.
     * @default []
     */
    mounts: z
      .array(
        z
          .object({
            hostPath: z.string().min(1),
            containerPath: z.string().startsWith('/'),
            writable: z.boolean().default(false),
          })
          .strict(),
      )
      .max(16)
      .default([]),
    /** Output beyond this many characters (stdout and stderr together) is cut, with a marker; the log keeps all. @default 10000 */
    maxOutputChars: z.number().int().min(500).max(1_000_000).default(10_000),
    /** Largest snippet accepted. @default 4m */
    maxCodeBytes: byteSize(1, BOUNDS.stdinBytes.max).default('4m'),
  })
  .strict()
  .refine((c) => c.timeoutSeconds <= c.maxTimeoutSeconds, {
    message: 'timeoutSeconds (the default limit) must not be above maxTimeoutSeconds',
    path: ['timeoutSeconds'],
  })
  .default({});
