import type { FunctionCall, FunctionDef, GenerateContentFunction, PromptItem } from './genaicode-types.js';
import type { HostProfile } from './host-profile.js';

/** One standalone model call the plugin makes: its prompt, the functions offered, the tier. */
export interface ModelRequest {
  prompt: PromptItem[];
  functionDefs: FunctionDef[];
  /** A tier of the host's (`HostProfile.tiers`): lite for summaries and the task's steps. */
  tier: keyof HostProfile['tiers'];
  temperature: number;
}

/** What the model answered, whichever shape the host gave it in. */
export interface ModelAnswer {
  calls: FunctionCall[];
  /** Text the model wrote instead of (or beside) a call; empty when none. */
  text: string;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function asCall(value: unknown): FunctionCall | undefined {
  if (!isObject(value) || typeof value.name !== 'string') return undefined;
  return {
    ...(typeof value.id === 'string' ? { id: value.id } : {}),
    name: value.name,
    ...(isObject(value.args) ? { args: value.args } : {}),
  };
}

/**
 * Reads a host's answer: 0.9.5's list of function calls, or 1.x's list of parts (function
 * calls, text, and kinds we do not use), and anything else as no answer at all.
 */
export function readModelAnswer(result: unknown): ModelAnswer {
  const calls: FunctionCall[] = [];
  const texts: string[] = [];
  for (const item of Array.isArray(result) ? (result as unknown[]) : []) {
    if (isObject(item) && item.type === 'functionCall') {
      const call = asCall(item.functionCall);
      if (call) calls.push(call);
    } else if (isObject(item) && item.type === 'text') {
      if (typeof item.text === 'string' && item.text.trim()) texts.push(item.text);
    } else {
      const call = asCall(item);
      if (call) calls.push(call);
    }
  }
  return { calls, text: texts.join('\n') };
}

/**
 * The one place the plugin calls GenAIcode's model, in the convention of the host that
 * loaded it. `requiredFunctionName` stays null in both: 0.9.5 checks a required name against
 * its own definitions and rejects ours, and with one definition offered (and, in 1.x, only
 * function calls expected) every service forces a call anyway. The caller checks the
 * arguments itself. `options` are the host's own options for this run, passed back as they
 * came: 1.x's services read them.
 */
export async function callModel(
  host: HostProfile,
  fn: GenerateContentFunction,
  options: object,
  request: ModelRequest,
): Promise<ModelAnswer> {
  const modelType = host.tiers[request.tier];
  const result =
    host.convention === 'config'
      ? await fn(
          request.prompt,
          {
            modelType,
            temperature: request.temperature,
            functionDefs: request.functionDefs,
            requiredFunctionName: null,
            expectedResponseType: { text: false, functionCall: true, media: false },
          },
          options,
        )
      : await fn(request.prompt, request.functionDefs, null, request.temperature, modelType, options);
  return readModelAnswer(result);
}
