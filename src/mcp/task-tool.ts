import { RUN_CONTAINER_TASK } from '../actions/task-spec.js';
import { taskEnvironment } from '../actions/answers.js';
import { swallowed } from '../debug.js';
import { SandboxError } from '../errors.js';
import { changesLine } from '../project/project-changes.js';
import { runTask, type TaskResult } from '../task/task-loop.js';
import { mcpTool } from './mcp-tool.js';
import { startChecked } from './start-sandbox.js';

/**
 * runContainerTask over MCP: the same inner loop and container as the plugin's, on the
 * model the server has (Gemini where a key is set, else the client's through sampling);
 * listed only when there is one.
 */
export const RUN_CONTAINER_TASK_TOOL = mcpTool(
  RUN_CONTAINER_TASK,
  (config) => ({
    readOnlyHint: false,
    destructiveHint: config.project.mount === 'rw',
    idempotentHint: false,
    // A model chooses the commands, and the task's network is its own setting.
    openWorldHint: true,
  }),
  async (args, ctx) => {
    const model = ctx.taskModel;
    if (!model)
      throw new SandboxError(
        'INVALID_CONFIG',
        'runContainerTask needs a model: set GEMINI_API_KEY for the server, or use a client that offers sampling.',
      );
    const { config } = ctx.runtime;
    const manager = ctx.runtime.manager();
    const { sandbox, choice } = await startChecked(ctx, args, {
      network: config.task.network,
      ...(args.workingDir ? { workdir: args.workingDir } : {}),
    });
    let result: TaskResult;
    try {
      result = await runTask({
        sandbox,
        taskDescription: args.taskDescription,
        model,
        limits: {
          maxCommands: Math.min(args.maxCommands ?? config.task.maxCommands, config.task.maxCommands),
          budgetMs: config.task.budgetMs,
          commandTimeoutMs: config.exec.timeoutMs,
        },
        log: manager.logs.create('task'),
        environment: taskEnvironment(choice.image, sandbox, config.task.network),
        signal: ctx.signal,
      });
    } catch (e) {
      await sandbox.stop().catch((stopError: unknown) => swallowed(`removing ${sandbox.name} after a failed task`, stopError));
      throw e;
    }
    const notRemoved = await sandbox.stop().then(
      () => undefined,
      (e: unknown) => (e instanceof Error ? e.message : String(e)),
    );
    const projectChanges = await sandbox.projectChanges();
    return {
      answer: {
        success: result.success,
        summary: result.summary,
        logPath: result.logPath,
        commandsRun: result.commandsRun,
        ...(args.image === undefined ? { image: choice.image } : {}),
        ...(choice.note ? { note: choice.note } : {}),
        ...(projectChanges ? { projectChanges } : {}),
        ...(notRemoved
          ? {
              cleanup: `container ${sandbox.name} could not be removed (${notRemoved}); it is removed when this server exits, or at its expiry`,
            }
          : {}),
      },
      userText: `runContainerTask ${result.success ? 'succeeded' : 'did not succeed'} after ${result.commandsRun} commands; log: ${result.logPath}${projectChanges ? `; ${changesLine(projectChanges)}` : ''}`,
    };
  },
  (ctx) => ctx.taskModel !== undefined,
);
