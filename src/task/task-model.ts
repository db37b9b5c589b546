import { z } from 'zod/v4';
import { describeIssues, functionDef, issueMessage, type FunctionCall, type FunctionDef } from '../function-def.js';

export type { FunctionCall, FunctionDef } from '../function-def.js';

/**
 * The port the task loop talks to a model through. Two calls, two tiers: the cheapest
 * model picks each next step; a capable model writes the final summary. Adapters: the
 * running GenAIcode's generateContentFn, and Gemini through @google/generative-ai.
 */
export interface TaskModel {
  /** One call: the model must answer with function calls among `functions`. */
  call(tier: 'step' | 'summary', request: ModelRequest, signal?: AbortSignal): Promise<FunctionCall[]>;
}

export interface ModelRequest {
  system: string;
  prompt: string;
  functions: FunctionDef[];
}

const NextCommand = z.object({
  command: z
    .string()
    .refine((c) => c.trim() !== '', 'command is empty')
    .describe('the shell command line'),
  reasoning: z.string().describe('one sentence: why this command').optional(),
});
const TaskComplete = z.object({ summary: z.string().describe('what was achieved').optional() });
const TaskFailed = z.object({ reason: z.string().min(1, 'reason is required').describe('why') });
/** The summary model's one function. */
const TaskSummary = z.object({ summary: z.string().describe('key results, successes and errors') });

export const NEXT_COMMAND_DEF = functionDef('nextCommand', 'Run this single shell command next in the container.', NextCommand);
export const TASK_COMPLETE_DEF = functionDef('taskComplete', 'The task is done (the command history shows it).', TaskComplete);
export const TASK_FAILED_DEF = functionDef(
  'taskFailed',
  'The task cannot be completed, or you cannot determine the next step.',
  TaskFailed,
);
export const TASK_SUMMARY_DEF = functionDef('taskSummary', 'The concise summary of the task outcome.', TaskSummary);

export const STEP_FUNCTIONS = [NEXT_COMMAND_DEF, TASK_COMPLETE_DEF, TASK_FAILED_DEF];

export type TaskStep =
  { kind: 'command'; command: string; reasoning?: string } | { kind: 'complete'; summary?: string } | { kind: 'failed'; reason: string };

/** Reads the model's answer as one step, or says what is wrong with it. */
export function parseStep(calls: FunctionCall[]): { ok: true; step: TaskStep } | { ok: false; error: string } {
  const known = calls.filter((c) => STEP_FUNCTIONS.some((d) => d.name === c.name));
  const call = known[0];
  if (!call)
    return {
      ok: false,
      error: `expected one call to nextCommand, taskComplete or taskFailed; got ${calls.map((c) => c.name).join(', ') || 'no call'}`,
    };
  if (call.name === 'nextCommand') {
    const p = NextCommand.safeParse(call.args ?? {});
    if (!p.success) return { ok: false, error: `nextCommand: ${describeIssues(p.error)}` };
    return { ok: true, step: { kind: 'command', command: p.data.command, ...(p.data.reasoning ? { reasoning: p.data.reasoning } : {}) } };
  }
  if (call.name === 'taskComplete') {
    const p = TaskComplete.safeParse(call.args ?? {});
    return p.success
      ? { ok: true, step: { kind: 'complete', ...(p.data.summary ? { summary: p.data.summary } : {}) } }
      : { ok: false, error: 'taskComplete: summary must be a string' };
  }
  const p = TaskFailed.safeParse(call.args ?? {});
  return p.success
    ? { ok: true, step: { kind: 'failed', reason: p.data.reason } }
    : { ok: false, error: `taskFailed: ${p.error.issues[0] ? issueMessage(p.error.issues[0]) : 'invalid'}` };
}
