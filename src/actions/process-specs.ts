import { z } from 'zod/v4';
import { containerIdArg } from './argument-schemas.js';
import { defineActionSpec } from './action-spec.js';

/**
 * The background-process actions (processes/, docs/processes.md). Their lines are read on
 * every turn inside GenAIcode's capped prompt: each says only what the model cannot guess.
 */

/** The longest wait for a port or for output a model may ask for. */
export const MAX_PROCESS_WAIT_MS = 10 * 60_000;
const DEFAULT_WAIT_MS = 30_000;

const container = containerIdArg.describe('container id or name');
const processId = z
  .string()
  .regex(/^p\d{1,6}$/, 'a processId is p<number>, as runCommand returned it')
  .describe('processId from runCommand');
const waitMs = z.number().int().min(0).max(MAX_PROCESS_WAIT_MS).describe(`default ${DEFAULT_WAIT_MS}`).optional();

/** A wait's bound: what the model asked for, or the default. */
export const waitTimeout = (ms: number | undefined): number => ms ?? DEFAULT_WAIT_MS;

export const READ_PROCESS_OUTPUT = defineActionSpec({
  name: 'readProcessOutput',
  description: 'New output of a background process since the last read.',
  returns: '{ status, fromLine, toLine, output }',
  args: z.object({ containerId: container, processId, sinceLine: z.number().int().min(0).describe('read after this line').optional() }),
});

export const WRITE_PROCESS_INPUT = defineActionSpec({
  name: 'writeProcessInput',
  description: "Write text to a background process's stdin.",
  returns: '{ bytes, status }',
  args: z.object({
    containerId: container,
    processId,
    text: z
      .string()
      .max(64 * 1024)
      .describe('include \\n to end a line'),
    closeInput: z.boolean().describe('close stdin after (EOF)').optional(),
  }),
});

export const STOP_PROCESS = defineActionSpec({
  name: 'stopProcess',
  description: 'Stop a background process and everything it started.',
  returns: '{ status, exitCode, verified }',
  args: z.object({ containerId: container, processId }),
});

export const LIST_PROCESSES = defineActionSpec({
  name: 'listProcesses',
  description: "List a container's background processes.",
  returns: '{ processes: [{ processId, command, status, lines }] }',
  args: z.object({ containerId: container }),
});

export const WAIT_FOR_PORT = defineActionSpec({
  name: 'waitForPort',
  description: 'Wait until something in the container listens on a TCP port.',
  returns: '{ listening, address, hostAddress? }',
  args: z.object({ containerId: container, port: z.number().int().min(1).max(65535).describe('TCP port'), timeoutMs: waitMs }),
});

export const WAIT_FOR_OUTPUT = defineActionSpec({
  name: 'waitForOutput',
  description: "Wait until a background process's new output contains a text.",
  returns: '{ found, line, text }',
  args: z.object({
    containerId: container,
    processId,
    pattern: z.string().min(1).max(1000).describe('plain text, not a regex'),
    timeoutMs: waitMs,
  }),
});

export const PROCESS_SPECS = [
  READ_PROCESS_OUTPUT,
  WRITE_PROCESS_INPUT,
  STOP_PROCESS,
  LIST_PROCESSES,
  WAIT_FOR_PORT,
  WAIT_FOR_OUTPUT,
] as const;
