import { createReadStream } from 'node:fs';
import { showInvisible } from '../display-text.js';
import { isSandboxError } from '../errors.js';
import type { LogSink } from '../capture/log-store.js';
import type { ExecResult } from '../commands/exec-types.js';
import type { ExecOptions } from '../commands/exec-types.js';
import { historyEntry, renderHistory, type HistoryEntry } from './task-history.js';
import { parseStep, STEP_FUNCTIONS, TASK_SUMMARY_DEF, type TaskModel, type TaskStep } from './task-model.js';
import { swallowed } from '../debug.js';

export interface TaskLimits {
  /** Commands the loop may run. @default 25 */
  maxCommands: number;
  /** Wall-clock budget of the whole task. */
  budgetMs: number;
  /** Timeout of each command (also cut to the budget left). */
  commandTimeoutMs: number;
}

type TaskEndReason = 'completed' | 'failed' | 'max-commands' | 'budget' | 'aborted' | 'model-error' | 'container-error';

export interface TaskProgress {
  step: number;
  command?: string;
  reasoning?: string;
  result?: Pick<ExecResult, 'exitCode' | 'timedOut' | 'oomKilled' | 'durationMs'>;
  end?: TaskEndReason;
}

/**
 * What the loop needs of a sandbox: to run one command. A Sandbox is one; a unit test's
 * stand-in is another, so the loop's logic (invalid answers, limits, budget, the summary's
 * fallback) is tested without an engine.
 */
export interface CommandRunner {
  exec(command: string, options: ExecOptions): Promise<ExecResult>;
}

export interface RunTaskOptions {
  sandbox: CommandRunner;
  taskDescription: string;
  model: TaskModel;
  limits: TaskLimits;
  /** The task's log file, open (LogStore.create): every command, its full output, the model's reasoning. */
  log: LogSink;
  /** One line about the environment for the model (image, network, workdir). */
  environment: string;
  signal?: AbortSignal;
  waitIfPaused?: () => Promise<void>;
  onProgress?: (p: TaskProgress) => void;
}

export interface TaskResult {
  success: boolean;
  summary: string;
  summaryKind: 'model' | 'extractive';
  endReason: TaskEndReason;
  /** Why it ended, in a sentence. */
  reason: string;
  commandsRun: number;
  logPath: string;
  /** The prompt size (characters) of each step request, for the token benchmark. */
  stepPromptChars: number[];
}

export const STEP_SYSTEM_PROMPT = 'You are an expert system operator inside a Docker container.';

/** The inner-loop prompt; finishing and giving up are function calls (taskComplete / taskFailed), not magic words. */
export function stepPrompt(o: {
  taskDescription: string;
  environment: string;
  history: string;
  commandsLeft: number;
  secondsLeft: number;
  note?: string;
}): string {
  return [
    'Based on the overall task and the history of commands executed so far, determine the single next shell command to run (call nextCommand).',
    'If the task is complete, call taskComplete. If you cannot determine the next step, call taskFailed.',
    'A non-zero exit is information: fix the cause and continue, or give up with taskFailed.',
    '',
    `Environment: ${o.environment}`,
    `Limits: ${o.commandsLeft} commands and ${o.secondsLeft} s left.`,
    '',
    'Overall Task:',
    o.taskDescription,
    '',
    'Command History (stdout/stderr):',
    o.history,
    ...(o.note ? ['', o.note] : []),
    '',
    'Next command:',
  ].join('\n');
}

/** The final summary prompt (for the capable model). */
export function summaryPrompt(taskDescription: string, fullLog: string, outcome?: string): string {
  return [
    'Based on the following task description and the full command log, provide a concise summary of the outcome.',
    'Highlight key results, successes, and any errors encountered.',
    '',
    'Task Description:',
    taskDescription,
    '',
    'Full Command Log:',
    fullLog,
    '',
    ...(outcome ? [`Outcome: ${outcome}`, ''] : []),
    'Summary:',
  ].join('\n');
}

const SUMMARY_LOG_CHARS = 24_000;
const SUMMARY_OUTPUT_CHARS = 2_000;

function endSentence(reason: TaskEndReason, detail: string, limits: TaskLimits): string {
  switch (reason) {
    case 'completed':
      return 'The task was completed.';
    case 'failed':
      return `The task failed: ${detail}`;
    case 'max-commands':
      return `Stopped: the limit of ${limits.maxCommands} commands was reached before the task was done.`;
    case 'budget':
      return `Stopped: the time budget of ${Math.round(limits.budgetMs / 1000)} s ran out before the task was done.`;
    case 'aborted':
      return `The task was aborted${detail ? `: ${detail}` : ''}.`;
    case 'model-error':
      return `Stopped: the model gave no valid next step (${detail}).`;
    case 'container-error':
      return `Stopped: the container failed (${detail}).`;
  }
}

function fullLogForSummary(history: readonly HistoryEntry[]): string {
  const per = history.map((e) => {
    const out =
      e.output.length > SUMMARY_OUTPUT_CHARS
        ? `${e.output.slice(0, SUMMARY_OUTPUT_CHARS / 2)}\n[...]\n${e.output.slice(-SUMMARY_OUTPUT_CHARS / 2)}`
        : e.output;
    return `#${e.step} $ ${e.command}\n${out.replace(/\n$/, '')}\n-> exit ${e.exitCode}${e.timedOut ? ' (timed out)' : ''}${e.oomKilled ? ' (out of memory)' : ''}`;
  });
  let text = per.join('\n');
  if (text.length > SUMMARY_LOG_CHARS)
    text = `[${text.length - SUMMARY_LOG_CHARS} characters of earlier steps cut]\n${text.slice(-SUMMARY_LOG_CHARS)}`;
  return text || '(no commands were run)';
}

/**
 * The inner loop: asks the cheap model for one step at a time, runs each command in the
 * sandbox, feeds results back (bounded history), until the model completes or fails the
 * task, or a limit, an abort or a container error ends it. Then the capable model writes
 * the summary (extractive if that call fails). Never throws for model or command
 * failures: they end the task with `success: false` and the reason.
 */
export async function runTask(o: RunTaskOptions): Promise<TaskResult> {
  const started = performance.now();
  const history: HistoryEntry[] = [];
  const stepPromptChars: number[] = [];
  const log = o.log;
  const write = (text: string) => log.write(Buffer.from(text));
  write(
    `# Task\n${o.taskDescription}\n# Environment\n${o.environment}\n# Limits\n${o.limits.maxCommands} commands, ${o.limits.budgetMs} ms, ${o.limits.commandTimeoutMs} ms per command\n\n`,
  );

  let endReason: TaskEndReason | undefined;
  let detail = '';
  let modelNote: string | undefined;
  try {
    for (let step = 1; !endReason;) {
      const elapsed = performance.now() - started;
      if (o.signal?.aborted) [endReason, detail] = ['aborted', 'interrupted by the user'];
      else if (history.length >= o.limits.maxCommands) endReason = 'max-commands';
      else if (elapsed >= o.limits.budgetMs) endReason = 'budget';
      if (endReason) break;
      await o.waitIfPaused?.();

      const prompt = stepPrompt({
        taskDescription: o.taskDescription,
        environment: o.environment,
        history: renderHistory(history),
        commandsLeft: o.limits.maxCommands - history.length,
        secondsLeft: Math.max(0, Math.round((o.limits.budgetMs - elapsed) / 1000)),
        ...(modelNote ? { note: modelNote } : {}),
      });
      stepPromptChars.push(prompt.length + STEP_SYSTEM_PROMPT.length);
      let parsed: ReturnType<typeof parseStep>;
      try {
        parsed = parseStep(
          await o.model.call('step', { system: STEP_SYSTEM_PROMPT, prompt: showInvisible(prompt), functions: STEP_FUNCTIONS }, o.signal),
        );
      } catch (e) {
        if (o.signal?.aborted) {
          [endReason, detail] = ['aborted', 'interrupted by the user'];
          break;
        }
        parsed = { ok: false, error: `model call failed: ${e instanceof Error ? e.message : String(e)}` };
      }
      if (!parsed.ok) {
        write(`## step ${step}: invalid model answer: ${parsed.error}\n`);
        if (modelNote) {
          [endReason, detail] = ['model-error', parsed.error];
          break;
        }
        modelNote = `Your previous answer was invalid (${parsed.error}). Answer with exactly one call: nextCommand, taskComplete or taskFailed.`;
        continue;
      }
      modelNote = undefined;
      const s: TaskStep = parsed.step;
      if (s.kind === 'complete') {
        write(`## step ${step}: taskComplete${s.summary ? `: ${s.summary}` : ''}\n`);
        [endReason, detail] = ['completed', s.summary ?? ''];
        break;
      }
      if (s.kind === 'failed') {
        write(`## step ${step}: taskFailed: ${s.reason}\n`);
        [endReason, detail] = ['failed', s.reason];
        break;
      }

      // The step model's own call may have used up the budget: no command starts after it.
      if (performance.now() - started >= o.limits.budgetMs) {
        endReason = 'budget';
        break;
      }
      o.onProgress?.({ step, command: s.command, ...(s.reasoning ? { reasoning: s.reasoning } : {}) });
      write(`## step ${step}${s.reasoning ? `\nreasoning: ${s.reasoning}` : ''}\n$ ${s.command}\n`);
      const left = o.limits.budgetMs - (performance.now() - started);
      let r: ExecResult;
      try {
        r = await o.sandbox.exec(s.command, {
          timeoutMs: Math.max(1000, Math.min(o.limits.commandTimeoutMs, Math.floor(left))),
          ...(o.signal ? { signal: o.signal } : {}),
          label: `task-${step}`,
        });
      } catch (e) {
        if (isSandboxError(e) && e.code === 'ABORTED') [endReason, detail] = ['aborted', 'interrupted by the user'];
        else [endReason, detail] = ['container-error', e instanceof Error ? e.message : String(e)];
        write(`[${detail}]\n`);
        break;
      }
      await appendFile(log, r.logPath);
      write(`\n-> exit ${r.exitCode} in ${r.durationMs} ms${r.reason ? ` (${r.reason})` : ''}\n\n`);
      history.push(historyEntry(step, r));
      o.onProgress?.({
        step,
        command: s.command,
        result: { exitCode: r.exitCode, timedOut: r.timedOut, oomKilled: r.oomKilled, durationMs: r.durationMs },
      });
      if (r.canceled) {
        [endReason, detail] = ['aborted', 'interrupted during a command'];
        break;
      }
      step++;
    }
    endReason ??= 'aborted';
    o.onProgress?.({ step: history.length, end: endReason });

    const reason = endSentence(endReason, detail, o.limits);
    write(`# End\n${reason}\n`);
    const summary = await summarize(o, history, endReason, reason, detail);
    write(`# Summary (${summary.kind})\n${summary.text}\n`);
    return {
      success: endReason === 'completed',
      summary: summary.text,
      summaryKind: summary.kind,
      endReason,
      reason,
      commandsRun: history.length,
      logPath: log.path,
      stepPromptChars,
    };
  } finally {
    log.end();
  }
}

async function summarize(
  o: RunTaskOptions,
  history: HistoryEntry[],
  endReason: TaskEndReason,
  reason: string,
  detail: string,
): Promise<{ text: string; kind: 'model' | 'extractive' }> {
  if (endReason !== 'aborted') {
    try {
      const calls = await o.model.call(
        'summary',
        {
          system: 'You write the outcome of a task run in a Docker container for a coding assistant.',
          prompt: showInvisible(summaryPrompt(o.taskDescription, fullLogForSummary(history), reason)),
          functions: [TASK_SUMMARY_DEF],
        },
        o.signal,
      );
      const text = calls.find((c) => c.name === TASK_SUMMARY_DEF.name)?.args?.summary;
      if (typeof text === 'string' && text.trim()) return { text: `${reason} ${text.trim()}`, kind: 'model' };
    } catch (e) {
      // the extractive summary below: the result is never held back
      swallowed('task summary model', e);
    }
  }
  const last = history
    .slice(-3)
    .map((e) => `\`${e.command.length > 80 ? `${e.command.slice(0, 80)}…` : e.command}\` -> exit ${e.exitCode}`);
  const text = [
    endReason === 'aborted' ? `aborted (${detail || 'interrupted'}).` : reason,
    `${history.length} command${history.length === 1 ? '' : 's'} run.`,
    ...(last.length ? [`Last: ${last.join('; ')}.`] : []),
    ...(endReason === 'completed' && detail ? [`Model's note: ${detail}`] : []),
  ].join(' ');
  return { text, kind: 'extractive' };
}

/** Copies a command's log into the task log (a missing or unreadable one is skipped). */
async function appendFile(log: LogSink, path: string): Promise<void> {
  try {
    for await (const chunk of createReadStream(path)) log.write(chunk as Buffer);
  } catch (e) {
    // the command's own log is gone or unreadable: the task log goes on without it
    swallowed(`copying ${path} into the task log`, e);
  }
}
