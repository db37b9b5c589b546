import type { FunctionCall, FunctionDef } from '../../function-def.js';

/**
 * The parts of GenAIcode's plugin API we use, written out structurally so the package
 * builds and type-checks without genaicode installed (it is an optional peer), and so one
 * place records what we rely on. Checked against genaicode 0.9.5
 * (dist/ai-service/common-types.d.ts, dist/prompt/steps/step-ask-question/step-ask-question-types.d.ts)
 * and 1.0.1 (the same files, and prompt/steps/step-iterate/step-iterate-types.d.ts).
 */

// A function definition and a call have the same shapes as GenAIcode's: ours, from the foundation.
export type { FunctionCall, FunctionDef };

export interface PromptItem {
  type: 'systemPrompt' | 'user' | 'assistant';
  systemPrompt?: string;
  text?: string;
  functionResponses?: Array<{ call_id?: string; name: string; content?: string; isError?: boolean }>;
  functionCalls?: FunctionCall[];
  cache?: boolean;
}

/**
 * GenAIcode's model function, as handed to an action. Its form depends on the host
 * (`HostProfile.convention`): 0.9.5 takes `(prompt, functionDefs, requiredFunctionName,
 * temperature, modelType, options)` and answers function calls; 0.10 and later take
 * `(prompt, config, options)` and answer parts. Only `host/model-call.ts` calls it.
 */
export type GenerateContentFunction = (prompt: PromptItem[], ...rest: unknown[]) => Promise<unknown>;

export interface AskQuestionArgs {
  actionType: string;
  message: string;
  decisionMakingProcess?: string;
}

export interface ActionHandlerProps {
  /** The dispatcher's call that chose the action: 0.9.5 passes askQuestionCall, 1.x iterateCall. */
  askQuestionCall?: FunctionCall<AskQuestionArgs>;
  iterateCall?: FunctionCall<AskQuestionArgs>;
  prompt: PromptItem[];
  /** CodegenOptions: passed back to the host untouched. */
  options: object;
  generateContentFn: GenerateContentFunction;
  waitIfPaused: () => Promise<void>;
}

export interface ActionResult {
  breakLoop: boolean;
  items: Array<{ assistant: PromptItem & { type: 'assistant' }; user: PromptItem & { type: 'user' } }>;
}

export type ActionHandler = (props: ActionHandlerProps) => Promise<ActionResult>;

export interface Plugin {
  name: string;
  actionHandlers?: Record<string, { handler: ActionHandler; description: string }>;
}
