import { z } from 'zod';
import { imageReferenceProblem, namesRegistry } from '../policy/image-ref.js';

/**
 * The kinds of value a setting takes, and the bounds of the limits: byte sizes in Docker's
 * notation, image references, registry prefixes. The schema's sections (config-schema.ts,
 * code-execute-schema.ts) are written with them.
 */

/** Bounds of the limits, shared by the schema and by the checks of start and exec options. */
export const BOUNDS = {
  memoryBytes: { min: 8 * 1024 ** 2, max: 64 * 1024 ** 3 },
  diskBytes: { min: 64 * 1024 ** 2, max: 1024 ** 4 },
  cpus: { min: 0.05, max: 64 },
  pids: { min: 8, max: 65536 },
  ttlSeconds: { min: 10, max: 7 * 24 * 3600 },
  timeoutMs: { min: 100, max: 24 * 3600 * 1000 },
  tmpfsBytes: { min: 1024 ** 2, max: 16 * 1024 ** 3 },
  /** A command's stdin (codeExecute's code travels there). */
  stdinBytes: { min: 0, max: 16 * 1024 ** 2 },
  codeTimeoutSeconds: { min: 1, max: 3600 },
  /** One command's full log (its first and last halves kept): room for any build's output, never a disk. */
  logCommandBytes: { min: 64 * 1024, max: 64 * 1024 ** 3 },
  /** Every log of one session together. */
  logSessionBytes: { min: 1024 ** 2, max: 1024 ** 4 },
  /** Free disk space under which logs stop growing. */
  logMinFreeBytes: { min: 0, max: 1024 ** 4 },
  /** Older sessions' logs together (retention). */
  logTotalBytes: { min: 1024 ** 2, max: 1024 ** 4 },
} as const;

const SIZE_UNITS: Record<string, number> = {
  '': 1,
  b: 1,
  k: 1024,
  kb: 1024,
  kib: 1024,
  m: 1024 ** 2,
  mb: 1024 ** 2,
  mib: 1024 ** 2,
  g: 1024 ** 3,
  gb: 1024 ** 3,
  gib: 1024 ** 3,
};

/** Parses a byte size: a number of bytes, or Docker's notation ('512m', '1g', '64MiB'). */
export function parseByteSize(value: string | number): number | undefined {
  if (typeof value === 'number') return Number.isInteger(value) && value >= 0 ? value : undefined;
  const m = /^\s*(\d+(?:\.\d+)?)\s*([a-z]*)\s*$/i.exec(value);
  if (!m) return undefined;
  const unit = SIZE_UNITS[(m[2] ?? '').toLowerCase()];
  return unit === undefined ? undefined : Math.floor(Number(m[1]) * unit);
}

function sizeText(n: number): string {
  for (const [unit, size] of [
    ['g', 1024 ** 3],
    ['m', 1024 ** 2],
    ['k', 1024],
  ] as const)
    if (n >= size && n % size === 0) return `${n / size}${unit}`;
  return `${n} bytes`;
}

export const byteSize = (min: number, max: number) =>
  z.union([z.number(), z.string()]).transform((v, ctx) => {
    const n = parseByteSize(v);
    if (n === undefined) {
      ctx.addIssue({
        code: z.ZodIssueCode.custom,
        message: `expected a size like 512m, 1g or a number of bytes, got ${JSON.stringify(v)}`,
      });
      return z.NEVER;
    }
    if (n < min || n > max) {
      ctx.addIssue({
        code: z.ZodIssueCode.custom,
        message: `expected between ${sizeText(min)} and ${sizeText(max)}, got ${JSON.stringify(v)}`,
      });
      return z.NEVER;
    }
    return n;
  });

/** An image reference in Docker's grammar (policy/image-ref.ts). */
export const imageRef = z.string().superRefine((v, ctx) => {
  const problem = imageReferenceProblem(v);
  if (problem) ctx.addIssue({ code: z.ZodIssueCode.custom, message: `not a valid image reference: ${problem}` });
});

/** A registry and optional path, as it comes before an image name: host[:port][/path]. */
export const registryPrefix = z.string().superRefine((v, ctx) => {
  const trimmed = v.replace(/\/+$/, '');
  const problem = imageReferenceProblem(`${trimmed}/x`);
  if (problem || !namesRegistry(trimmed.split('/')[0]!))
    ctx.addIssue({
      code: z.ZodIssueCode.custom,
      message: `expected a registry host[:port] with an optional path, e.g. registry.example.com/team${problem ? ` (${problem})` : ''}`,
    });
});
