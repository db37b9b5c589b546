import type { ActionHandler } from '../../../host/genaicode-types.js';
import { answerForModel, buildCommandAnswer } from '../../../../answer/command-answer.js';
import type { PluginRuntime } from '../../../plugin-runtime.js';
import { liteModelSummarizer } from '../../../summarize-output.js';
import { changesLine } from '../../../../project/project-changes.js';
import { confirmAndStart } from './confirm-and-start.js';
import { actionListLine } from '../../../../actions/action-spec.js';
import { MAX_COMMAND_TIMEOUT_MS, RUN_COMMAND, START_CONTAINER, STOP_CONTAINER } from '../../../../actions/container-specs.js';
import { commandUserText, noSuchContainer, startAnswer } from '../../../../actions/answers.js';
import { defineAction } from './define-action.js';
import { handleOutcome, isProcessHandle, runCommandIn } from '../../../../actions/process-actions.js';

export function createDockerActionHandlers(
  runtime: PluginRuntime,
): Record<'startContainer' | 'runCommand' | 'stopContainer', { handler: ActionHandler; description: string }> {
  const startContainer = defineAction(runtime, START_CONTAINER, async ({ args, host, props, reply }) => {
    const { image, language, name, project, keepAfterConversation } = args;
    await props.waitIfPaused();
    const keep = keepAfterConversation === true;
    const started = await confirmAndStart(runtime, host, props.options, {
      image,
      language,
      ...(name ? { name } : {}),
      ...(project ? { project } : {}),
      purpose: 'to run commands in',
      conversation: { prompt: props.prompt, keep },
    });
    if (!started.ok) return reply(started.answer, started.answer.error, true);
    const { answer, userText } = startAnswer(
      started.sandbox,
      started.choice,
      keep ? 'kept after this conversation, until stopContainer or expiresAt' : 'removed when this conversation ends',
    );
    return reply(answer, userText);
  });

  const runCommand = defineAction(runtime, RUN_COMMAND, async ({ args, host, props, reply }) => {
    const { containerId, cmd, timeoutMs, background, yieldMs } = args;
    const sandbox = runtime.manager().get(containerId);
    if (!sandbox) throw noSuchContainer(runtime.manager(), containerId);
    await props.waitIfPaused();
    const signal = host.abortSignal();
    const result = await runCommandIn(sandbox, cmd, { timeoutMs, signal, background, yieldMs });
    if (isProcessHandle(result)) {
      const { answer, userText } = handleOutcome(sandbox.name, cmd, result);
      return reply(answer, userText);
    }
    await props.waitIfPaused();
    const answer = await buildCommandAnswer(result, {
      thresholdBytes: runtime.config().plugin.summaryThresholdBytes,
      summarizer: liteModelSummarizer(host.profile, props),
      ...(signal ? { signal } : {}),
      timeoutArgument: { name: 'timeoutMs', maxMs: MAX_COMMAND_TIMEOUT_MS },
    });
    return reply(answerForModel(answer), commandUserText(sandbox.name, cmd, result));
  });

  const stopContainer = defineAction(runtime, STOP_CONTAINER, async ({ args, reply }) => {
    const sandbox = runtime.manager().get(args.containerId);
    if (!sandbox) throw noSuchContainer(runtime.manager(), args.containerId);
    await sandbox.stop();
    // After the container is gone: nothing can change the tree any more.
    const projectChanges = await sandbox.projectChanges();
    const stopped = sandbox.stoppedProcesses.map((p) => ({ processId: p.processId, command: p.command }));
    return reply(
      {
        status: 'removed',
        name: sandbox.name,
        ...(projectChanges ? { projectChanges } : {}),
        ...(stopped.length ? { processesStopped: stopped } : {}),
      },
      `Stopped and removed container ${sandbox.name}${projectChanges ? `; ${changesLine(projectChanges)}` : ''}.`,
    );
  });

  return {
    startContainer: { handler: startContainer, description: actionListLine(START_CONTAINER) },
    runCommand: { handler: runCommand, description: actionListLine(RUN_COMMAND) },
    stopContainer: { handler: stopContainer, description: actionListLine(STOP_CONTAINER) },
  };
}
