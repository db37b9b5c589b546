import { homedir } from 'node:os';
import { z } from 'zod/v4';
import { BOUNDS, MAX_COMMAND_TIMEOUT_MS } from '../../../../config/config-schema.js';
import type { ActionHandler } from '../../../host/genaicode-types.js';
import { answerForModel, buildCommandAnswer } from '../../../../answer/command-answer.js';
import { killedBySignal } from '../../../../answer/signals.js';
import { SandboxError } from '../../../../errors.js';
import type { PluginRuntime } from '../../../plugin-runtime.js';
import type { ExecResult } from '../../../../sandbox/exec-types.js';
import { liteModelSummarizer } from '../../../summarize-output.js';
import {
  containerIdArg,
  containerNameArg,
  IMAGE_OR_LANGUAGE,
  imageArg,
  languageArg,
  MAX_COMMAND_BYTES,
  projectMountArg,
  projectMountNote,
} from './argument-schemas.js';
import { changesLine } from '../../../../sandbox/project-changes.js';
import { confirmAndStart } from './confirm-and-start.js';
import { actionListLine, defineActionSpec } from './action-spec.js';
import { defineAction } from './define-action.js';

export const START_CONTAINER = defineActionSpec({
  name: 'startContainer',
  description: 'Start a sandboxed Docker container to run commands in.',
  returns: '{ id, name, status, image, language?, note?, expiresAt, lifetime, project? }',
  note: `${IMAGE_OR_LANGUAGE} The user may be asked to confirm. The container is removed when this conversation ends unless keepAfterConversation is true.`,
  args: z
    .object({
      image: imageArg.describe('Docker image, e.g. genaicode-docker/sandbox-python:latest. Must be on the allowlist.').optional(),
      language: languageArg.describe("a language's golden image instead of a named image").optional(),
      name: containerNameArg.describe('container name (letters, digits, _ . -)').optional(),
      project: projectMountArg.optional(),
      keepAfterConversation: z
        .boolean()
        .describe('keep the container after this conversation ends (until stopContainer or its expiry)')
        .optional(),
    })
    .refine((a) => a.image === undefined || a.language === undefined, IMAGE_OR_LANGUAGE),
  configNotes: (config) => ({ project: projectMountNote(config) }),
});

export const RUN_COMMAND = defineActionSpec({
  name: 'runCommand',
  description: 'Run one shell command (sh -c) in a container started with startContainer.',
  returns:
    '{ exitCode, output } when the output is short, else { exitCode, summary, keyLines }; signal, timedOut, oomKilled, reason only when they happened',
  note: 'keyLines are verbatim lines of the output: errors, failing tests, assertion details, locations, the verdict. The full log is on disk.',
  args: z.object({
    containerId: containerIdArg.describe('id or name returned by startContainer'),
    cmd: z
      .string()
      .min(1, { error: 'cmd is required', abort: true })
      .refine((c) => c.trim() !== '', 'cmd is empty')
      .refine(
        (c) => Buffer.byteLength(c) <= MAX_COMMAND_BYTES,
        `cmd is longer than ${MAX_COMMAND_BYTES} bytes (the kernel's limit for one argument): write a script to a file in smaller steps and run it`,
      )
      .describe('shell command line'),
    timeoutMs: z.number().int().min(BOUNDS.timeoutMs.min).max(MAX_COMMAND_TIMEOUT_MS).describe('timeout in milliseconds').optional(),
  }),
  configNotes: (config) => ({ timeoutMs: `default ${config.exec.timeoutMs}, at most ${MAX_COMMAND_TIMEOUT_MS}` }),
});

export const STOP_CONTAINER = defineActionSpec({
  name: 'stopContainer',
  description: 'Stop and remove a container started with startContainer.',
  returns: "{ status: 'removed', name, projectChanges? }",
  note: 'Always stop containers when done.',
  args: z.object({ containerId: containerIdArg.describe('id or name returned by startContainer') }),
});

/** The one line the user sees (and the model reads beside the answer) for one command. */
/** A path as a person reads it: under the home folder as ~/... */
function shortPath(path: string): string {
  const home = homedir();
  return path.startsWith(`${home}/`) ? `~${path.slice(home.length)}` : path;
}

export function commandUserText(container: string, cmd: string, r: ExecResult): string {
  const signal = killedBySignal(r)?.name;
  const flags = [
    r.timedOut && 'timed out',
    r.canceled && 'canceled',
    r.oomKilled && 'out of memory',
    r.diskLimitHit && 'disk limit',
    signal,
  ]
    .filter(Boolean)
    .join(', ');
  return `${container}$ ${cmd.length > 80 ? `${cmd.slice(0, 80)}…` : cmd} -> exit ${r.exitCode}${flags ? ` (${flags})` : ''}; log: ${shortPath(r.logPath)}`;
}

export function noSuchContainer(runtime: PluginRuntime, containerId: string): SandboxError {
  const live = runtime
    .manager()
    .list()
    .map((s) => s.name);
  return new SandboxError(
    'CONTAINER_NOT_FOUND',
    `No container ${JSON.stringify(containerId)} was started in this session${live.length ? `; live: ${live.join(', ')}` : '; start one with startContainer'}.`,
    { data: { containerId } },
  );
}

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
    const { sandbox, choice } = started;
    const mounted = sandbox.info.project;
    const answer = {
      id: sandbox.id.slice(0, 12),
      name: sandbox.name,
      status: 'running',
      image: choice.image,
      ...(choice.language ? { language: choice.language } : {}),
      ...(choice.note ? { note: choice.note } : {}),
      expiresAt: sandbox.info.expiresAt.toISOString(),
      lifetime: keep ? 'kept after this conversation, until stopContainer or expiresAt' : 'removed when this conversation ends',
      ...(mounted
        ? {
            project: `${mounted.mount === 'rw' ? 'writable' : mounted.mount === 'scratch' ? 'scratch (writes thrown away)' : 'read-only'} at ${mounted.containerRoot}`,
          }
        : {}),
    };
    return reply(
      answer,
      `Started container ${sandbox.name} from ${choice.image}${choice.language ? ` (${choice.language})` : ''}${mounted ? ` with the project ${mounted.mount === 'rw' ? 'writable' : mounted.mount === 'scratch' ? 'scratch (writes thrown away)' : 'read-only'} at ${mounted.containerRoot}` : ''}.${choice.note ? ` Note: ${choice.note}.` : ''}`,
    );
  });

  const runCommand = defineAction(runtime, RUN_COMMAND, async ({ args, host, props, reply }) => {
    const { containerId, cmd, timeoutMs } = args;
    const sandbox = runtime.manager().get(containerId);
    if (!sandbox) throw noSuchContainer(runtime, containerId);
    await props.waitIfPaused();
    const signal = host.abortSignal();
    const result = await sandbox.exec(cmd, { ...(timeoutMs ? { timeoutMs } : {}), ...(signal ? { signal } : {}) });
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
    if (!sandbox) throw noSuchContainer(runtime, args.containerId);
    await sandbox.stop();
    // After the container is gone: nothing can change the tree any more.
    const projectChanges = await sandbox.projectChanges();
    return reply(
      { status: 'removed', name: sandbox.name, ...(projectChanges ? { projectChanges } : {}) },
      `Stopped and removed container ${sandbox.name}${projectChanges ? `; ${changesLine(projectChanges)}` : ''}.`,
    );
  });

  return {
    startContainer: { handler: startContainer, description: actionListLine(START_CONTAINER) },
    runCommand: { handler: runCommand, description: actionListLine(RUN_COMMAND) },
    stopContainer: { handler: stopContainer, description: actionListLine(STOP_CONTAINER) },
  };
}
