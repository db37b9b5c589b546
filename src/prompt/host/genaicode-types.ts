import type { FunctionCall, FunctionDef } from '../../function-def.js';

/**
 * The parts of GenAIcode's plugin API we use, written out structurally so the package
 * builds and type-checks without genaicode installed (it is an optional peer), and so one
 * place records what we rely on. Checked against genaicode 0.9.5
 * (dist/ai-service/common-types.d.ts, dist/prompt/steps/step-ask-question/step-ask-question-types.d.ts).
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

/** 0.9.5: 'default' | 'cheap' | 'reasoning'; later versions add 'lite'. */
type ModelTypeValue = string;

export type GenerateContentFunction = (
  prompt: PromptItem[],
  functionDefs: FunctionDef[],
  requiredFunctionName: string | null,
  temperature: number,
  modelType?: ModelTypeValue,
  options?: object,
) => Promise<FunctionCall[]>;

export interface AskQuestionArgs {
  actionType: string;
  message: string;
  decisionMakingProcess?: string;
}

export interface ActionHandlerProps {
  /** 0.9.5 name; later versions call it iterateCall. */
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
