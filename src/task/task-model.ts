import { z } from 'zod';

/** A function the task's model may call: its name, what it does, its parameters as JSON Schema. */
export interface FunctionDef {
  name: string;
  description: string;
  parameters: { type: 'object'; properties: Record<string, unknown>; required: string[] };
}

/** A call the model made: the function's name and its arguments. */
export interface FunctionCall<T = Record<string, unknown>> {
  id?: string;
  name: string;
  args?: T;
}

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

export const NEXT_COMMAND_DEF: FunctionDef = {
  name: 'nextCommand',
  description: 'Run this single shell command next (it runs with sh -c in the container).',
  parameters: {
    type: 'object',
    properties: {
      command: { type: 'string', description: 'the shell command line' },
      reasoning: { type: 'string', description: 'one sentence: why this command' },
    },
    required: ['command'],
  },
};

export const TASK_COMPLETE_DEF: FunctionDef = {
  name: 'taskComplete',
  description: 'The task is done (the command history shows it).',
  parameters: {
    type: 'object',
    properties: { summary: { type: 'string', description: 'what was achieved' } },
    required: [],
  },
};

export const TASK_FAILED_DEF: FunctionDef = {
  name: 'taskFailed',
  description: 'The task cannot be completed, or you cannot determine the next step.',
  parameters: {
    type: 'object',
    properties: { reason: { type: 'string', description: 'why' } },
    required: ['reason'],
  },
};

export const TASK_SUMMARY_DEF: FunctionDef = {
  name: 'taskSummary',
  description: 'The concise summary of the task outcome.',
  parameters: {
    type: 'object',
    properties: { summary: { type: 'string', description: 'key results, successes and errors' } },
    required: ['summary'],
  },
};

export const STEP_FUNCTIONS = [NEXT_COMMAND_DEF, TASK_COMPLETE_DEF, TASK_FAILED_DEF];

export type TaskStep =
  | { kind: 'command'; command: string; reasoning?: string }
  | { kind: 'complete'; summary?: string }
  | { kind: 'failed'; reason: string };

const NextCommand = z.object({ command: z.string().refine((s) => s.trim() !== '', 'command is empty'), reasoning: z.string().optional() });
const TaskComplete = z.object({ summary: z.string().optional() });
const TaskFailed = z.object({ reason: z.string().min(1, 'reason is required') });

/** Reads the model's answer as one step, or says what is wrong with it. */
export function parseStep(calls: FunctionCall[]): { ok: true; step: TaskStep } | { ok: false; error: string } {
  const known = calls.filter((c) => STEP_FUNCTIONS.some((d) => d.name === c.name));
  const call = known[0];
  if (!call) return { ok: false, error: `expected one call to nextCommand, taskComplete or taskFailed; got ${calls.map((c) => c.name).join(', ') || 'no call'}` };
  if (call.name === 'nextCommand') {
    const p = NextCommand.safeParse(call.args ?? {});
    if (!p.success) return { ok: false, error: `nextCommand: ${p.error.issues.map((i) => `${i.path.join('.') || 'args'}: ${i.message}`).join('; ')}` };
    return { ok: true, step: { kind: 'command', command: p.data.command, ...(p.data.reasoning ? { reasoning: p.data.reasoning } : {}) } };
  }
  if (call.name === 'taskComplete') {
    const p = TaskComplete.safeParse(call.args ?? {});
    return p.success ? { ok: true, step: { kind: 'complete', ...(p.data.summary ? { summary: p.data.summary } : {}) } } : { ok: false, error: 'taskComplete: summary must be a string' };
  }
  const p = TaskFailed.safeParse(call.args ?? {});
  return p.success ? { ok: true, step: { kind: 'failed', reason: p.data.reason } } : { ok: false, error: `taskFailed: ${p.error.issues[0]?.message ?? 'invalid'}` };
}
