import { z } from 'zod/v4';
import {
  containerPathArg,
  IMAGE_OR_LANGUAGE,
  imageArg,
  languageArg,
  MAX_TASK_DESCRIPTION_CHARS,
  projectMountArg,
  projectMountNote,
} from './argument-schemas.js';
import { defineActionSpec } from './action-spec.js';

export const RUN_CONTAINER_TASK = defineActionSpec({
  name: 'runContainerTask',
  description:
    'Run a multi-step command-line task in a fresh sandboxed container: an inner loop runs commands until it is done, then cleans up.',
  returns: '{ success, summary, logPath, commandsRun, image?, note?, projectChanges?, cleanup? }',
  note: IMAGE_OR_LANGUAGE,
  args: z
    .object({
      image: imageArg.describe('Docker image, e.g. genaicode-docker/sandbox-python:latest. Must be on the allowlist.').optional(),
      language: languageArg.describe("a language's golden image instead of a named image").optional(),
      taskDescription: z
        .string()
        .trim()
        .min(10, 'taskDescription must describe the task (at least 10 characters)')
        .max(MAX_TASK_DESCRIPTION_CHARS, `taskDescription must be at most ${MAX_TASK_DESCRIPTION_CHARS} characters`)
        .describe('A clear, step-by-step natural-language description of the whole task and how to tell it is done.'),
      workingDir: containerPathArg.describe('absolute working directory in the container').optional(),
      maxCommands: z.number().int().min(1).max(500).describe('lower limit on commands').optional(),
      project: projectMountArg.optional(),
    })
    .refine((a) => a.image === undefined || a.language === undefined, IMAGE_OR_LANGUAGE),
  configNotes: (config) => ({
    workingDir: `default ${config.workdir}`,
    maxCommands: `default and maximum ${config.task.maxCommands}`,
    project: projectMountNote(config),
  }),
});
