import { z } from 'zod/v4';
import type { Config } from '../config/config-schema.js';
import { imageReferenceProblem } from '../policy/image-ref.js';
import { containerNameProblem, PROJECT_MOUNTS } from '../policy/policy.js';
import { LANGUAGES } from '../config/languages.js';

/**
 * The argument types the model's actions share. Each is checked here, when the model's
 * arguments arrive, so a bad value gets an INVALID_ARGUMENT answer (after one retry)
 * before the user is asked anything and before the engine is called.
 */

/** An image reference in Docker's grammar (policy/image-ref.ts). */
export const imageArg = z
  .string()
  .trim()
  .min(1, 'image is required')
  .superRefine((v, ctx) => {
    const problem = imageReferenceProblem(v);
    if (problem) ctx.addIssue({ code: 'custom', message: `not a valid image reference: ${problem}` });
  });

/** A language of the golden images: its image is started instead of a named one. */
export const languageArg = z.enum(LANGUAGES);

/** One sentence for both: with neither, the project's language (or the default image) decides. */
export const IMAGE_OR_LANGUAGE =
  "Give image or language, not both; with neither, the project's detected language picks its image when it is available, else the default image.";

/** A container name Docker accepts. */
export const containerNameArg = z
  .string()
  .trim()
  .min(1, 'name must not be empty')
  .superRefine((v, ctx) => {
    const problem = containerNameProblem(v);
    if (problem) ctx.addIssue({ code: 'custom', message: `not a valid container name: ${problem}` });
  });

/** An absolute path in the container: printable, no `..` component, at most 1,024 characters. */
export const containerPathArg = z
  .string()
  .trim()
  .max(1024, 'the path is at most 1024 characters')
  // eslint-disable-next-line no-control-regex -- control characters are what it refuses
  .regex(/^\/[^\u0000-\u001f\u007f]*$/, 'the path must be absolute, with no control characters')
  .refine((p) => !p.split('/').includes('..'), 'the path must not contain a .. component');

/** A container of this session: a name (at most 63 characters) or an id (64 hex digits at most). */
export const containerIdArg = z
  .string()
  .trim()
  .min(1, 'containerId is required')
  .max(64, 'containerId is at most 64 characters (a name or an id)');

/**
 * The longest command line: the kernel refuses a single argument over 128 KiB
 * (MAX_ARG_STRLEN), and the command is one argument of the wrapper.
 */
export const MAX_COMMAND_BYTES = 128 * 1024 - 1;

export const MAX_TASK_DESCRIPTION_CHARS = 20_000;

/** How the project is mounted at the working folder: not at all, read-only, or writable. */
export const projectMountArg = z
  .enum(PROJECT_MOUNTS)
  .describe(
    "mount the user's project at the working folder: 'ro' (read-only: run its tests, see the user's edits), 'scratch' (writable, every write thrown away at the end: caches and build output never reach the user's files) or 'rw' (changes applied to the user's files after each command; files the host runs, like .git, package.json and executables, are held back)",
  );

/** The configuration's part of the `project` argument's description. */
export function projectMountNote(config: Pick<Config, 'project'>): string {
  return `default none; at most ${config.project.mount} (project.mount)`;
}
