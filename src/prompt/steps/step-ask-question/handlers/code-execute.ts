import { z } from 'zod/v4';
import { BOUNDS } from '../../../../config/config-schema.js';
import { buildCodeAnswer } from '../../../../code/code-answer.js';
import { CODE_LANGUAGES } from '../../../../code/code-executor.js';
import { SandboxError } from '../../../../errors.js';
import type { ActionHandler } from '../../../host/genaicode-types.js';
import type { PluginRuntime } from '../../../plugin-runtime.js';
import { liteModelSummarizer } from '../../../summarize-output.js';
import { actionListLine, defineActionSpec } from './action-spec.js';
import { defineAction } from './define-action.js';
import { commandUserText } from './docker.js';

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

export function createCodeExecuteHandler(runtime: PluginRuntime): { handler: ActionHandler; description: string } {
  const handler = defineAction(runtime, CODE_EXECUTE, async ({ args, host, props, reply }) => {
    const config = runtime.config();
    if (!config.codeExecute.enabled)
      throw new SandboxError('INVALID_CONFIG', 'codeExecute is turned off in this configuration (codeExecute.enabled=false).');
    await props.waitIfPaused();
    const signal = host.abortSignal();
    // One sandbox per conversation, retired when it ends (or the user interrupts it).
    runtime.conversations().watch(props.prompt, signal);
    const run = await runtime.codeExecutor(props.prompt).execute({
      language: args.language,
      code: args.code,
      ...(args.timeoutSeconds !== undefined ? { timeoutSeconds: args.timeoutSeconds } : {}),
      ...(signal ? { signal } : {}),
      ...(config.plugin.confirmStart ? { approveStart: (question: string) => host.confirm(question, props.options) } : {}),
    });
    await props.waitIfPaused();
    const answer = await buildCodeAnswer(run, {
      maxOutputChars: config.codeExecute.maxOutputChars,
      summarizer: liteModelSummarizer(host.profile, props),
      ...(signal ? { signal } : {}),
    });
    const where = `${run.container === 'new' ? 'new' : 'reused'} container${run.stateLost ? `; state lost: ${run.stateLost}` : ''}`;
    return reply(
      answer,
      `${commandUserText(run.containerName, `${args.language} snippet (${Buffer.byteLength(args.code)} bytes)`, run.result)} (${where})`,
    );
  });
  return { handler, description: actionListLine(CODE_EXECUTE) };
}
