import { z } from 'zod/v4';
import { BOUNDS, MAX_COMMAND_TIMEOUT_MS } from '../config/config-schema.js';
import {
  containerIdArg,
  containerNameArg,
  IMAGE_OR_LANGUAGE,
  imageArg,
  languageArg,
  MAX_COMMAND_BYTES,
  projectMountArg,
  projectMountNote,
} from './argument-schemas.js';
import { defineActionSpec } from './action-spec.js';

/** The longest timeout the model may ask for one command (a deliberate cap below the configurable bound). */
export { MAX_COMMAND_TIMEOUT_MS };

/** What every host's start asks: the image (or a language), a name, the project mount. */
export const START_CONTAINER_SHAPE = {
  image: imageArg.describe('Docker image, e.g. genaicode-docker/sandbox-python:latest. Must be on the allowlist.').optional(),
  language: languageArg.describe("a language's golden image instead of a named image").optional(),
  name: containerNameArg.describe('container name (letters, digits, _ . -)').optional(),
  project: projectMountArg.optional(),
};

/** Image and language name the same thing two ways: at most one of them. */
export const imageOrLanguage = (a: { image?: string | undefined; language?: string | undefined }): boolean =>
  a.image === undefined || a.language === undefined;

export const START_CONTAINER = defineActionSpec({
  name: 'startContainer',
  description: 'Start a sandboxed Docker container to run commands in.',
  returns: '{ id, name, status, image, language?, note?, expiresAt, lifetime, project?, ports? }',
  note: `${IMAGE_OR_LANGUAGE} The user may be asked to confirm. The container is removed when this conversation ends unless keepAfterConversation is true.`,
  args: z
    .object({
      ...START_CONTAINER_SHAPE,
      keepAfterConversation: z
        .boolean()
        .describe('keep the container after this conversation ends (until stopContainer or its expiry)')
        .optional(),
    })
    .refine(imageOrLanguage, IMAGE_OR_LANGUAGE),
  configNotes: (config) => ({ project: projectMountNote(config) }),
});

export const RUN_COMMAND = defineActionSpec({
  name: 'runCommand',
  description: 'Run one shell command (sh -c) in a container started with startContainer.',
  returns:
    '{ exitCode, output } when the output is short, else { exitCode, summary, keyLines }; signal, timedOut, oomKilled, reason only when they happened',
  note: 'keyLines are verbatim lines of the output: errors, failing tests, assertion details, locations, the verdict. The full log is on disk.',
  args: z.object({
    containerId: containerIdArg.describe('id or name returned by startContainer'),
    cmd: z
      .string()
      .min(1, { error: 'cmd is required', abort: true })
      .refine((c) => c.trim() !== '', 'cmd is empty')
      .refine(
        (c) => Buffer.byteLength(c) <= MAX_COMMAND_BYTES,
        `cmd is longer than ${MAX_COMMAND_BYTES} bytes (the kernel's limit for one argument): write a script to a file in smaller steps and run it`,
      )
      .describe('shell command line'),
    timeoutMs: z.number().int().min(BOUNDS.timeoutMs.min).max(MAX_COMMAND_TIMEOUT_MS).describe('timeout in milliseconds').optional(),
    background: z.boolean().describe('run in the background: answers { processId, status, outputSoFar } at once').optional(),
    yieldMs: z.number().int().min(0).max(MAX_COMMAND_TIMEOUT_MS).describe('still running after this long: answer as background').optional(),
  }),
  configNotes: (config) => ({ timeoutMs: `default ${config.exec.timeoutMs}, at most ${MAX_COMMAND_TIMEOUT_MS}` }),
});

export const STOP_CONTAINER = defineActionSpec({
  name: 'stopContainer',
  description: 'Stop and remove a container started with startContainer.',
  returns: "{ status: 'removed', name, projectChanges? }",
  note: 'Always stop containers when done.',
  args: z.object({ containerId: containerIdArg.describe('id or name returned by startContainer') }),
});
