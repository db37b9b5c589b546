import { z } from 'zod/v4';
import { BOUNDS } from '../config/config-schema.js';
import { SandboxError } from '../errors.js';
import { describeIssues } from '../function-def.js';
import { NETWORK_MODES } from '../policy/policy.js';

/**
 * The checks of a start's and a command's options, on the same bounds as the configuration
 * (BOUNDS): one place says what a limit may be, whether it comes from the config file, the
 * model or a library call. Unknown keys pass here: the policy refuses the dangerous ones
 * (privileged, host namespaces, ...) by name first.
 */

const absolutePath = z.string().regex(/^\//, 'must be an absolute path in the container');
const environment = z.record(z.string(), z.string()).superRefine((env, ctx) => {
  for (const name of Object.keys(env)) {
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name))
      ctx.addIssue({ code: 'custom', message: `Environment variable name ${JSON.stringify(name)} is not valid` });
  }
});
const whole = (b: { min: number; max: number }) => z.number().int().min(b.min).max(b.max);

export const StartOptionsSchema = z.looseObject({
  network: z.enum(NETWORK_MODES).optional(),
  memoryBytes: whole(BOUNDS.memoryBytes).optional(),
  cpus: z.number().min(BOUNDS.cpus.min).max(BOUNDS.cpus.max).optional(),
  pids: whole(BOUNDS.pids).optional(),
  ttlSeconds: whole(BOUNDS.ttlSeconds).optional(),
  tmpfsBytes: whole(BOUNDS.tmpfsBytes).optional(),
  workdir: absolutePath.optional(),
  env: environment.optional(),
});

export const ExecOptionsSchema = z.looseObject({
  timeoutMs: whole(BOUNDS.timeoutMs).optional(),
  workdir: absolutePath.optional(),
  env: environment.optional(),
  label: z.string().optional(),
  background: z.boolean().optional(),
  yieldMs: whole({ min: 0, max: BOUNDS.timeoutMs.max }).optional(),
  stdin: z
    .union([z.string(), z.instanceof(Buffer)])
    .refine((v) => Buffer.byteLength(v) <= BOUNDS.stdinBytes.max, `at most ${BOUNDS.stdinBytes.max} bytes`)
    .optional(),
});

/** @throws SandboxError INVALID_ARGUMENT naming each option that is out of bounds. */
export function checkOptions(schema: z.ZodType, options: unknown, what: string): void {
  const r = schema.safeParse(options);
  if (!r.success) throw new SandboxError('INVALID_ARGUMENT', `Invalid ${what}: ${describeIssues(r.error)}.`);
}

/** Checks a command's options; its timeout, or the sandbox's default. */
export function validateExecOptions(options: { timeoutMs?: number }, defaultTimeoutMs: number): number {
  checkOptions(ExecOptionsSchema, options, 'command options');
  return options.timeoutMs ?? defaultTimeoutMs;
}
