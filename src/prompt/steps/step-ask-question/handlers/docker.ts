import { relative } from 'node:path';
import { z } from 'zod';
import type { Config } from '../../../../config/config-schema.js';
import type { ActionHandler, FunctionDef } from '../../../host/genaicode-types.js';
import { buildCommandAnswer } from '../../../../answer/command-answer.js';
import { SandboxError } from '../../../../errors.js';
import type { PluginRuntime } from '../../../plugin-runtime.js';
import type { ExecResult } from '../../../../sandbox/exec-types.js';
import { liteModelSummarizer } from '../../../summarize-output.js';
import { containerIdArg, containerNameArg, imageArg, MAX_COMMAND_BYTES } from './argument-schemas.js';
import { confirmAndStart } from './confirm-and-start.js';
import { defineAction } from './define-action.js';

const MAX_COMMAND_TIMEOUT_MS = 30 * 60_000;

export const START_CONTAINER_DEF: FunctionDef = {
  name: 'startContainer',
  description: 'Start a sandboxed Docker container to run commands in.',
  parameters: {
    type: 'object',
    properties: {
      image: { type: 'string', description: 'Docker image, e.g. genaicode-docker/sandbox-python:latest. Must be on the allowlist.' },
      name: { type: 'string', description: 'Optional container name (letters, digits, _ . -).' },
    },
    required: ['image'],
  },
};

/** The runCommand definition, with the configured default timeout. */
export const runCommandDef = (config: Config): FunctionDef => ({
  name: 'runCommand',
  description: 'Run one shell command (sh -c) in a container started with startContainer.',
  parameters: {
    type: 'object',
    properties: {
      containerId: { type: 'string', description: 'id or name returned by startContainer' },
      cmd: { type: 'string', description: 'shell command line' },
      timeoutMs: { type: 'number', description: `optional timeout in milliseconds (default ${config.exec.timeoutMs}, at most ${MAX_COMMAND_TIMEOUT_MS})` },
    },
    required: ['containerId', 'cmd'],
  },
});

export const STOP_CONTAINER_DEF: FunctionDef = {
  name: 'stopContainer',
  description: 'Stop and remove a container started with startContainer.',
  parameters: {
    type: 'object',
    properties: { containerId: { type: 'string', description: 'id or name returned by startContainer' } },
    required: ['containerId'],
  },
};

export const StartContainerArgs = z.object({
  image: imageArg,
  name: containerNameArg.optional(),
});

export const RunCommandArgs = z.object({
  containerId: containerIdArg,
  cmd: z
    .string()
    .min(1, 'cmd is required')
    .refine((s) => s.trim() !== '', 'cmd is empty')
    .refine((s) => Buffer.byteLength(s) <= MAX_COMMAND_BYTES, `cmd is longer than ${MAX_COMMAND_BYTES} bytes (the kernel's limit for one argument): write a script to a file in smaller steps and run it`),
  timeoutMs: z.number().int().positive().max(MAX_COMMAND_TIMEOUT_MS).optional(),
});

export const StopContainerArgs = z.object({
  containerId: containerIdArg,
});

/** Descriptions the model sees in askQuestion's action list, on every turn. */
export const DOCKER_ACTION_DESCRIPTIONS = {
  startContainer: 'Start a sandboxed Docker container (args: image, name?). Returns { id, name, status }. The user may be asked to confirm.',
  runCommand: 'Run a shell command in a started container (args: containerId, cmd, timeoutMs?). Returns { exitCode, summary, truncated, logPath }: short output verbatim, long output summarized; full log on disk.',
  stopContainer: 'Stop and remove a container (args: containerId). Always stop containers when done.',
} as const;

/** The one line the user sees (and the model reads beside the answer) for one command. */
export function commandUserText(container: string, cmd: string, r: ExecResult, projectRoot: string): string {
  const flags = [r.timedOut && 'timed out', r.canceled && 'canceled', r.oomKilled && 'out of memory'].filter(Boolean).join(', ');
  return `${container}$ ${cmd.length > 80 ? `${cmd.slice(0, 80)}…` : cmd} -> exit ${r.exitCode}${flags ? ` (${flags})` : ''}; log: ${relative(projectRoot, r.logPath)}`;
}

function noSuchContainer(runtime: PluginRuntime, containerId: string): SandboxError {
  const live = runtime.manager().list().map((s) => s.name);
  return new SandboxError(
    'CONTAINER_NOT_FOUND',
    `No container ${JSON.stringify(containerId)} was started in this session${live.length ? `; live: ${live.join(', ')}` : '; start one with startContainer'}.`,
    { data: { containerId } },
  );
}

export function createDockerActionHandlers(runtime: PluginRuntime): Record<'startContainer' | 'runCommand' | 'stopContainer', { handler: ActionHandler; description: string }> {
  const startContainer = defineAction(runtime, 'startContainer', () => START_CONTAINER_DEF, StartContainerArgs, async ({ args, host, props, reply }) => {
    const { image, name } = args;
    await props.waitIfPaused();
    const started = await confirmAndStart(runtime, host, props.options, { image, ...(name ? { name } : {}), purpose: 'to run commands in' });
    if (!started.ok) return reply(started.answer, started.answer.error, true);
    const sandbox = started.sandbox;
    const answer = { id: sandbox.id.slice(0, 12), name: sandbox.name, status: 'running', image, expiresAt: sandbox.info.expiresAt.toISOString() };
    return reply(answer, `Started container ${sandbox.name} from ${image}.`);
  });

  const runCommand = defineAction(runtime, 'runCommand', runCommandDef, RunCommandArgs, async ({ args, host, props, reply }) => {
    const { containerId, cmd, timeoutMs } = args;
    const sandbox = runtime.manager().get(containerId);
    if (!sandbox) throw noSuchContainer(runtime, containerId);
    await props.waitIfPaused();
    const signal = host.abortSignal();
    const result = await sandbox.exec(cmd, { ...(timeoutMs ? { timeoutMs } : {}), ...(signal ? { signal } : {}) });
    await props.waitIfPaused();
    const answer = await buildCommandAnswer(result, {
      thresholdBytes: runtime.config().plugin.summaryThresholdBytes,
      summarizer: liteModelSummarizer(props.generateContentFn, host.liteModel, props.options),
      ...(signal ? { signal } : {}),
    });
    return reply(answer, commandUserText(sandbox.name, cmd, result, runtime.config().projectRoot));
  });

  const stopContainer = defineAction(runtime, 'stopContainer', () => STOP_CONTAINER_DEF, StopContainerArgs, async ({ args, reply }) => {
    const sandbox = runtime.manager().get(args.containerId);
    if (!sandbox) throw noSuchContainer(runtime, args.containerId);
    await sandbox.stop();
    return reply({ status: 'removed', name: sandbox.name }, `Stopped and removed container ${sandbox.name}.`);
  });

  return {
    startContainer: { handler: startContainer, description: DOCKER_ACTION_DESCRIPTIONS.startContainer },
    runCommand: { handler: runCommand, description: DOCKER_ACTION_DESCRIPTIONS.runCommand },
    stopContainer: { handler: stopContainer, description: DOCKER_ACTION_DESCRIPTIONS.stopContainer },
  };
}
