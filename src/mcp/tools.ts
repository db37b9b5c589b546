import { z } from 'zod/v4';
import { defineActionSpec } from '../actions/action-spec.js';
import { commandUserText, noSuchContainer, readFileAnswer, startAnswer } from '../actions/answers.js';
import { IMAGE_OR_LANGUAGE } from '../actions/argument-schemas.js';
import { CODE_EXECUTE } from '../actions/code-spec.js';
import {
  imageOrLanguage,
  MAX_COMMAND_TIMEOUT_MS,
  RUN_COMMAND,
  START_CONTAINER,
  START_CONTAINER_SHAPE,
  STOP_CONTAINER,
} from '../actions/container-specs.js';
import { EDIT_CONTAINER_FILE, LIST_CONTAINER_DIRECTORY, READ_CONTAINER_FILE, WRITE_CONTAINER_FILE } from '../actions/file-specs.js';
import { READ_LOG, readLogLines } from '../actions/read-log.js';
import { handleOutcome, isProcessHandle, PROCESS_ACTIONS, runCommandIn } from '../actions/process-actions.js';
import { answerForModel, buildCommandAnswer } from '../answer/command-answer.js';
import { buildCodeAnswer } from '../code/code-answer.js';
import { SandboxError } from '../errors.js';
import { changesLine } from '../project/project-changes.js';
import { mcpTool, type McpTool, type ToolContext } from './mcp-tool.js';
import { startChecked } from './start-sandbox.js';
import { RUN_CONTAINER_TASK_TOOL } from './task-tool.js';

/** The lifetime of an MCP server's container, as startContainer's answer states it. */
const LIFETIME = 'removed by stopContainer, when this MCP server ends (its client closes it or exits), or at expiresAt';

/** The plugin's startContainer without the conversation: an MCP server's containers end with it. */
const MCP_START_CONTAINER = defineActionSpec({
  ...START_CONTAINER,
  note: `${IMAGE_OR_LANGUAGE} The container is ${LIFETIME}.`,
  args: z.object(START_CONTAINER_SHAPE).refine(imageOrLanguage, IMAGE_OR_LANGUAGE),
});

function sandboxOf(ctx: ToolContext, containerId: string) {
  const manager = ctx.runtime.manager();
  const sandbox = manager.get(containerId);
  if (!sandbox) throw noSuchContainer(manager, containerId);
  return sandbox;
}

const startContainer = mcpTool(
  MCP_START_CONTAINER,
  () => ({ readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true }),
  async (args, ctx) => {
    // Refused before anything starts: an image off the allowlist, more than project.mount allows.
    const { sandbox, choice } = await startChecked(ctx, args, {
      network: ctx.runtime.config.network,
      ...(args.name ? { name: args.name } : {}),
    });
    return startAnswer(sandbox, choice, LIFETIME);
  },
);

const runCommand = mcpTool(
  RUN_COMMAND,
  (config) => ({
    readOnlyHint: false,
    // A command in a container with the project writable can delete the user's files.
    destructiveHint: config.project.mount === 'rw',
    idempotentHint: false,
    openWorldHint: config.network !== 'none',
  }),
  async (args, ctx) => {
    const sandbox = sandboxOf(ctx, args.containerId);
    const result = await runCommandIn(sandbox, args.cmd, { ...args, signal: ctx.signal });
    if (isProcessHandle(result)) {
      const { answer, userText } = handleOutcome(sandbox.name, args.cmd, result);
      return { answer: { ...answer, logPath: result.logPath }, userText };
    }
    const answer = await buildCommandAnswer(result, {
      thresholdBytes: ctx.runtime.config.plugin.summaryThresholdBytes,
      ...(ctx.summarizer ? { summarizer: ctx.summarizer } : {}),
      signal: ctx.signal,
      timeoutArgument: { name: 'timeoutMs', maxMs: MAX_COMMAND_TIMEOUT_MS },
    });
    // No separate line for the user here: the log's path is in the answer, for readLog.
    return { answer: { ...answerForModel(answer), logPath: result.logPath }, userText: commandUserText(sandbox.name, args.cmd, result) };
  },
);

const stopContainer = mcpTool(
  STOP_CONTAINER,
  () => ({ readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false }),
  async (args, ctx) => {
    const sandbox = sandboxOf(ctx, args.containerId);
    await sandbox.stop();
    const projectChanges = await sandbox.projectChanges();
    const stopped = sandbox.stoppedProcesses.map((p) => ({ processId: p.processId, command: p.command }));
    return {
      answer: {
        status: 'removed',
        name: sandbox.name,
        ...(projectChanges ? { projectChanges } : {}),
        ...(stopped.length ? { processesStopped: stopped } : {}),
      },
      userText: `Stopped and removed container ${sandbox.name}${projectChanges ? `; ${changesLine(projectChanges)}` : ''}.`,
    };
  },
);

const codeExecute = mcpTool(
  CODE_EXECUTE,
  (config) => ({
    readOnlyHint: false,
    destructiveHint: false,
    idempotentHint: false,
    openWorldHint: config.codeExecute.network !== 'none',
  }),
  async (args, ctx) => {
    const { config } = ctx.runtime;
    if (!config.codeExecute.enabled)
      throw new SandboxError('INVALID_CONFIG', 'codeExecute is turned off in this configuration (codeExecute.enabled=false).');
    const run = await ctx.runtime.codeExecutor().execute({
      language: args.language,
      code: args.code,
      ...(args.timeoutSeconds !== undefined ? { timeoutSeconds: args.timeoutSeconds } : {}),
      signal: ctx.signal,
    });
    const answer = await buildCodeAnswer(run, {
      maxOutputChars: config.codeExecute.maxOutputChars,
      ...(ctx.summarizer ? { summarizer: ctx.summarizer } : {}),
      signal: ctx.signal,
    });
    return {
      answer: { ...answer },
      userText: commandUserText(run.containerName, `${args.language} snippet (${Buffer.byteLength(args.code)} bytes)`, run.result),
    };
  },
);

const readOnly = () => ({ readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false });

const readContainerFile = mcpTool(READ_CONTAINER_FILE, readOnly, async (args, ctx) => {
  const r = await sandboxOf(ctx, args.containerId).readFile(args.path, {
    ...(args.startLine !== undefined ? { startLine: args.startLine } : {}),
    ...(args.endLine !== undefined ? { endLine: args.endLine } : {}),
  });
  return {
    answer: readFileAnswer(r),
    userText: `Read ${r.path}${r.binary ? ' (binary)' : ` lines ${r.startLine}-${r.endLine} of ${r.totalLines}`}.`,
  };
});

const writeContainerFile = mcpTool(
  WRITE_CONTAINER_FILE,
  (config) => ({ readOnlyHint: false, destructiveHint: config.project.mount === 'rw', idempotentHint: true, openWorldHint: false }),
  async (args, ctx) => {
    const r = await sandboxOf(ctx, args.containerId).writeFile(args.path, args.content);
    return { answer: { ...r }, userText: `${r.created ? 'Created' : 'Wrote'} ${r.path} (${r.bytesWritten} bytes).` };
  },
);

const listContainerDirectory = mcpTool(LIST_CONTAINER_DIRECTORY, readOnly, async (args, ctx) => {
  const r = await sandboxOf(ctx, args.containerId).listDirectory(args.path ?? '.', {
    ...(args.depth !== undefined ? { depth: args.depth } : {}),
  });
  return { answer: { ...r }, userText: `Listed ${r.path} (${r.entries.length} entries).` };
});

const editContainerFile = mcpTool(
  EDIT_CONTAINER_FILE,
  (config) => ({ readOnlyHint: false, destructiveHint: config.project.mount === 'rw', idempotentHint: false, openWorldHint: false }),
  async (args, ctx) => {
    const r = await sandboxOf(ctx, args.containerId).editFile(args.path, args.oldText, args.newText);
    return { answer: { ...r }, userText: `Edited ${r.path}.` };
  },
);

const readLog = mcpTool(READ_LOG, readOnly, async (args, ctx) => {
  const { config } = ctx.runtime;
  const r = await readLogLines(
    config.logs.dir,
    args.logPath,
    { startLine: args.startLine, endLine: args.endLine },
    { maxLines: config.files.maxReadLines, maxBytes: config.files.maxReadBytes },
  );
  return { answer: { ...r }, userText: `Read ${r.logPath} lines ${r.startLine}-${r.endLine}.` };
});

/** The background-process tools: reads and waits change nothing; a write or a stop acts on a process. */
const processTools = PROCESS_ACTIONS.map(({ spec, run }) =>
  mcpTool(
    spec,
    () => {
      const reads = spec.name === 'readProcessOutput' || spec.name === 'listProcesses' || spec.name.startsWith('waitFor');
      return {
        readOnlyHint: reads,
        destructiveHint: spec.name === 'stopProcess',
        idempotentHint: spec.name === 'listProcesses',
        openWorldHint: false,
      };
    },
    async (args, ctx) => run(sandboxOf(ctx, String(args.containerId)), args),
  ),
);

/** Every tool of the server, in the order clients list them. */
export const MCP_TOOLS: readonly McpTool[] = [
  startContainer,
  runCommand,
  stopContainer,
  codeExecute,
  readContainerFile,
  writeContainerFile,
  listContainerDirectory,
  editContainerFile,
  readLog,
  RUN_CONTAINER_TASK_TOOL,
  ...processTools,
];
