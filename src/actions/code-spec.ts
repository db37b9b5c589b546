import { z } from 'zod/v4';
import { BOUNDS } from '../config/config-schema.js';
import { CODE_LANGUAGES } from '../code/code-executor.js';
import { defineActionSpec } from './action-spec.js';

export const CODE_EXECUTE = defineActionSpec({
  name: 'codeExecute',
  description:
    'Run a Python 3 or bash snippet in a sandbox (python3, bash, curl; read-only root, writable /tmp), without managing a container.',
  returns:
    '{ exitCode, stdout, stderr?, timedOut?, container: "reused" | "new", stateLost? }; output over the limit is cut and comes with summary, keyLines and logPath',
  note: "Calls of this conversation share one kept-alive container: only files (in /tmp) carry state from call to call, and a replaced container (stateLost) has none; the working folder is not on Python's import path.",
  args: z.object({
    language: z.enum(CODE_LANGUAGES).describe('python (run by python3) or bash'),
    code: z
      .string()
      .min(1, { error: 'code is required', abort: true })
      .refine((c) => c.trim() !== '', 'code is empty')
      .refine((c) => Buffer.byteLength(c) <= BOUNDS.stdinBytes.max, `code is longer than ${BOUNDS.stdinBytes.max} bytes`)
      .describe('the program text, run exactly as written'),
    timeoutSeconds: z
      .number()
      .int()
      .min(BOUNDS.codeTimeoutSeconds.min)
      .max(BOUNDS.codeTimeoutSeconds.max)
      .optional()
      .describe('hard time limit: the snippet and everything it started are killed at it'),
  }),
  configNotes: (config) => ({
    timeoutSeconds: `hard time limit in seconds (default ${config.codeExecute.timeoutSeconds}, at most ${config.codeExecute.maxTimeoutSeconds}): the snippet and everything it started are killed at it`,
  }),
});
