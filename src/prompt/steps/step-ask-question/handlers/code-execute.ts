import { buildCodeAnswer } from '../../../../code/code-answer.js';
import { SandboxError } from '../../../../errors.js';
import type { ActionHandler } from '../../../host/genaicode-types.js';
import type { PluginRuntime } from '../../../plugin-runtime.js';
import { liteModelSummarizer } from '../../../summarize-output.js';
import { actionListLine } from '../../../../actions/action-spec.js';
import { CODE_EXECUTE } from '../../../../actions/code-spec.js';
import { defineAction } from './define-action.js';
import { commandUserText } from '../../../../actions/answers.js';

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
