import { FunctionCallingMode, GoogleGenerativeAI, type FunctionDeclaration, type FunctionDeclarationSchema } from '@google/generative-ai';
import type { FunctionCall, FunctionDef, ModelRequest, TaskModel } from './task-model.js';

interface GeminiTaskModelOptions {
  apiKey: string;
  /** Model that picks each next command. @default gemini-2.5-flash */
  stepModel?: string;
  /** Model that writes the final summary. @default gemini-2.5-pro */
  summaryModel?: string;
  /** API base URL (tests point it at a local server). @default the SDK's */
  baseUrl?: string;
  /** Per-request timeout. @default 60000 */
  timeoutMs?: number;
}

export const DEFAULT_GEMINI_STEP_MODEL = 'gemini-2.5-flash';
export const DEFAULT_GEMINI_SUMMARY_MODEL = 'gemini-2.5-pro';

function declaration(def: FunctionDef): FunctionDeclaration {
  const parameters = {
    type: 'object',
    properties: def.parameters.properties,
    // An empty `required` list is rejected by the API: leave it out.
    ...(def.parameters.required.length ? { required: def.parameters.required } : {}),
  } as unknown as FunctionDeclarationSchema; // our JSON-schema subset is the API's schema shape
  return { name: def.name, description: def.description, parameters };
}

/** The task loop's model port on Gemini: function calling forced (mode ANY). */
export class GeminiTaskModel implements TaskModel {
  private readonly client: GoogleGenerativeAI;

  constructor(private readonly options: GeminiTaskModelOptions) {
    this.client = new GoogleGenerativeAI(options.apiKey);
  }

  async call(tier: 'step' | 'summary', request: ModelRequest, signal?: AbortSignal): Promise<FunctionCall[]> {
    const model = this.client.getGenerativeModel(
      {
        model:
          tier === 'step'
            ? (this.options.stepModel ?? DEFAULT_GEMINI_STEP_MODEL)
            : (this.options.summaryModel ?? DEFAULT_GEMINI_SUMMARY_MODEL),
        systemInstruction: request.system,
        tools: [{ functionDeclarations: request.functions.map(declaration) }],
        toolConfig: {
          functionCallingConfig: { mode: FunctionCallingMode.ANY, allowedFunctionNames: request.functions.map((f) => f.name) },
        },
        generationConfig: { temperature: 0.2 },
      },
      this.options.baseUrl ? { baseUrl: this.options.baseUrl } : {},
    );
    // Our own timeout and one signal per call: the SDK's `timeout` option leaves a timer
    // running after the answer (the process cannot exit for a minute), and it adds an abort
    // listener to the caller's signal on every call without removing it.
    const own = new AbortController();
    const timer = setTimeout(
      () => own.abort(new Error(`Gemini did not answer within ${this.options.timeoutMs ?? 60_000} ms`)),
      this.options.timeoutMs ?? 60_000,
    );
    const onAbort = () => own.abort(signal?.reason);
    if (signal?.aborted) own.abort(signal.reason);
    signal?.addEventListener('abort', onAbort, { once: true });
    let result;
    try {
      result = await model.generateContent({ contents: [{ role: 'user', parts: [{ text: request.prompt }] }] }, { signal: own.signal });
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
    }
    return (result.response.functionCalls() ?? []).map((c) => ({ name: c.name, args: (c.args ?? {}) as Record<string, unknown> }));
  }
}
