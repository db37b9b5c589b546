import { RUN_CONTAINER_TASK } from '../actions/task-spec.js';
import { mountDescription } from '../actions/answers.js';
import { swallowed } from '../debug.js';
import { SandboxError } from '../errors.js';
import { checkImageAllowed, checkProjectMount } from '../policy/policy.js';
import { chooseImage } from '../sandbox/golden-images.js';
import { changesLine } from '../sandbox/project-changes.js';
import { runTask, type TaskResult } from '../task/task-loop.js';
import { mcpTool } from './mcp-tool.js';

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
    const none = args.image === undefined && args.language === undefined;
    const choice = await chooseImage(
      config,
      manager.engine,
      { image: args.image, language: args.language },
      none ? ctx.runtime.projectLanguage() : undefined,
    );
    checkImageAllowed(choice.image, config.images.allow, config.images.projectAllow);
    const project = checkProjectMount(args.project ?? 'none', config.project.mount);
    const sandbox = await manager.start({
      image: choice.image,
      network: config.task.network,
      ...(args.workingDir ? { workdir: args.workingDir } : {}),
      project,
      signal: ctx.signal,
    });
    let result: TaskResult;
    try {
      const mounted = sandbox.info.project;
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
        environment: `image ${choice.image}; working directory ${sandbox.info.workdir}; ${mounted ? `the user's project ${mountDescription(mounted.mount).toLowerCase()} at ${mounted.containerRoot}` : 'no project mounted'}; network ${config.task.network}; /bin/sh; memory ${Math.round(sandbox.info.memoryBytes / 1024 ** 2)} MiB`,
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
