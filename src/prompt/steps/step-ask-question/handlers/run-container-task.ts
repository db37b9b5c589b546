import type { ActionHandler } from '../../../host/genaicode-types.js';
import type { PluginRuntime } from '../../../plugin-runtime.js';
import { swallowed } from '../../../../debug.js';
import { runTask, type TaskResult } from '../../../../task/task-loop.js';
import { genaicodeTaskModel } from '../../../genaicode-task-model.js';
import { changesLine } from '../../../../project/project-changes.js';
import { confirmAndStart } from './confirm-and-start.js';
import { actionListLine } from '../../../../actions/action-spec.js';
import { RUN_CONTAINER_TASK } from '../../../../actions/task-spec.js';
import { taskEnvironment } from '../../../../actions/answers.js';
import { defineAction } from './define-action.js';

export function createRunContainerTaskHandler(runtime: PluginRuntime): { handler: ActionHandler; description: string } {
  const handler = defineAction(runtime, RUN_CONTAINER_TASK, async ({ args, host, props, reply }) => {
    const { taskDescription, workingDir, maxCommands, project } = args;
    const config = runtime.config();
    await props.waitIfPaused();
    const started = await confirmAndStart(runtime, host, props.options, {
      image: args.image,
      language: args.language,
      network: config.task.network,
      ...(workingDir ? { workdir: workingDir } : {}),
      ...(project ? { project } : {}),
      purpose: 'for a multi-step task',
    });
    if (!started.ok) return reply(started.answer, started.answer.error, true);
    const { sandbox, choice } = started;
    const image = choice.image;
    let result: TaskResult;
    try {
      const signal = host.abortSignal();
      host.systemMessage(`runContainerTask: running in ${sandbox.name} (${image})`);
      result = await runTask({
        sandbox,
        taskDescription,
        model: genaicodeTaskModel(props, host),
        limits: {
          maxCommands: Math.min(maxCommands ?? config.task.maxCommands, config.task.maxCommands),
          budgetMs: config.task.budgetMs,
          commandTimeoutMs: config.exec.timeoutMs,
        },
        log: runtime.manager().logs.create('task'),
        environment: taskEnvironment(image, sandbox, config.task.network),
        ...(signal ? { signal } : {}),
        waitIfPaused: props.waitIfPaused,
        onProgress: (p) => {
          if (p.result) host.systemMessage(`runContainerTask step ${p.step}: \`${p.command}\` -> exit ${p.result.exitCode}`);
        },
      });
    } catch (e) {
      await sandbox.stop().catch((stopError: unknown) => swallowed(`removing ${sandbox.name} after a failed task`, stopError));
      throw e;
    }
    // A removal that fails must not hide the task's result: the answer says so instead (the
    // exit hook and the container's expiry still remove it).
    const notRemoved = await sandbox.stop().then(
      () => undefined,
      (e: unknown) => (e instanceof Error ? e.message : String(e)),
    );
    const projectChanges = await sandbox.projectChanges();
    const answer = {
      success: result.success,
      summary: result.summary,
      logPath: result.logPath,
      commandsRun: result.commandsRun,
      // The image when the model did not name it (a language's, or the project's language's or the default).
      ...(args.image === undefined ? { image } : {}),
      ...(choice.note ? { note: choice.note } : {}),
      ...(projectChanges ? { projectChanges } : {}),
      ...(notRemoved
        ? {
            cleanup: `container ${sandbox.name} could not be removed (${notRemoved}); it is removed when GenAIcode exits, or at ${sandbox.info.expiresAt.toISOString()}`,
          }
        : {}),
    };
    return reply(
      answer,
      `runContainerTask ${result.success ? 'succeeded' : 'did not succeed'} after ${result.commandsRun} command${result.commandsRun === 1 ? '' : 's'}; log: ${result.logPath}${projectChanges ? `; ${changesLine(projectChanges)}` : ''}${notRemoved ? `; container ${sandbox.name} not removed: ${notRemoved}` : ''}`,
    );
  });
  return { handler, description: actionListLine(RUN_CONTAINER_TASK) };
}
