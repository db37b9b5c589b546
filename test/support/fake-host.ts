/**
 * Typed stand-ins for what the GenAIcode adapter gets from the running GenAIcode: the host
 * services (confirmation, system messages, the abort signal, the model tiers) and the
 * model behind `generateContentFn`, scripted answer by answer. Both record what they were
 * given, so a test asserts on what the plugin asked and showed.
 */
import type {
  ActionHandlerProps,
  FunctionCall,
  FunctionDef,
  GenerateContentFunction,
  PromptItem,
} from '../../src/prompt/host/genaicode-types.js';
import type { HostServices } from '../../src/prompt/host/host-services.js';
import type { HostProfile } from '../../src/prompt/host/host-profile.js';

/** The model tiers the fake host names; distinct, so a test sees which one was asked. */
export const TIERS = { lite: 'lite-tier', cheap: 'cheap-tier', default: 'default-tier' } as const;

/** A host profile for unit tests: 0.9.5's conventions (or 1.x's), with the distinct tiers above. */
export function fakeProfile(convention: HostProfile['convention'] = 'positional'): HostProfile {
  return {
    name: `fake GenAIcode (${convention})`,
    convention,
    dispatcher: convention === 'config' ? 'iterate' : 'askQuestion',
    tiers: TIERS,
    builtinContainerTask: convention === 'config',
    showsResultAfterAbort: convention === 'positional',
    moduleUrl: () => undefined,
  };
}

export interface FakeHostOptions {
  /** The user's answer to each confirmation, in order; once used up, `otherwise`. @default [] */
  answers?: boolean[];
  /** The answer once `answers` is used up, or an error the confirmation throws. @default true */
  otherwise?: boolean | Error;
  /** The live abort signal. @default none */
  signal?: AbortSignal;
  /** Makes systemMessage throw for texts it matches (a host UI that fails). */
  failSystemMessage?: RegExp;
  /** @default fakeProfile('positional') */
  profile?: HostProfile;
}

/** A HostServices that records every question and message. */
export class FakeHost implements HostServices {
  readonly confirmations: Array<{ prompt: string; options: object }> = [];
  readonly messages: Array<{ text: string; data: unknown }> = [];
  readonly profile: HostProfile;
  signal: AbortSignal | undefined;
  private readonly answers: boolean[];

  constructor(private readonly options: FakeHostOptions = {}) {
    this.answers = [...(options.answers ?? [])];
    this.signal = options.signal;
    this.profile = options.profile ?? fakeProfile();
  }

  async confirm(prompt: string, options: object): Promise<boolean> {
    this.confirmations.push({ prompt, options });
    const next = this.answers.shift() ?? this.options.otherwise ?? true;
    if (next instanceof Error) throw next;
    return next;
  }

  systemMessage(text: string, data?: unknown): void {
    if (this.options.failSystemMessage?.test(text)) throw new Error(`host UI failed on: ${text}`);
    this.messages.push({ text, data });
  }

  abortSignal(): AbortSignal | undefined {
    return this.signal;
  }

  readonly endListeners: Array<(conversation: object) => Promise<void>> = [];

  onConversationEnd(listener: (conversation: object) => Promise<void>): void {
    this.endListeners.push(listener);
  }

  /** Ends `conversation` as GenAIcode does when a step breaks the ask-question loop. */
  async endConversation(conversation: object): Promise<void> {
    for (const l of this.endListeners) await l(conversation);
  }

  messageTexts(): string[] {
    return this.messages.map((m) => m.text);
  }
}

/** One call the plugin made to the model, as it was at the time of the call, whichever convention it came in. */
export interface GenerateCall {
  /** A copy: the plugin may add to its array after the call. */
  prompt: PromptItem[];
  functionDefs: FunctionDef[];
  requiredFunctionName: string | null;
  temperature: number;
  modelType: string | undefined;
  options: object | undefined;
  /** Which form the call had: 0.9.5's positional arguments or 1.x's config object. */
  convention: HostProfile['convention'];
  /** 1.x only: the config's expectedResponseType. */
  expectedResponseType?: unknown;
}

/** One scripted answer: the calls to return, an error to throw, or a function of the request. */
export type ScriptedAnswer = FunctionCall[] | Error | { text: string } | ((call: GenerateCall) => FunctionCall[] | Promise<FunctionCall[]>);

interface GenerateConfig {
  modelType?: string;
  temperature?: number;
  functionDefs?: FunctionDef[];
  requiredFunctionName?: string | null;
  expectedResponseType?: unknown;
}

/**
 * The model behind `generateContentFn`: answers from a queue, in order; once the queue is
 * empty, `otherwise` answers (without it, an empty queue fails the call, and so the test).
 * It speaks one host's convention (`convention`): 0.9.5's positional call answered with
 * function calls, or 1.x's config call answered with parts; a call in the other form fails.
 */
export class ScriptedModel {
  readonly calls: GenerateCall[] = [];
  private readonly queue: ScriptedAnswer[];

  constructor(
    answers: ScriptedAnswer[] = [],
    private readonly otherwise?: (call: GenerateCall) => ScriptedAnswer,
    readonly convention: HostProfile['convention'] = 'positional',
  ) {
    this.queue = [...answers];
  }

  readonly generateContentFn: GenerateContentFunction = async (prompt, ...rest) => {
    const positional = Array.isArray(rest[0]);
    if (positional !== (this.convention === 'positional')) {
      throw new Error(`ScriptedModel (${this.convention}): called in the ${positional ? 'positional' : 'config'} form`);
    }
    let call: GenerateCall;
    if (positional) {
      const [functionDefs, requiredFunctionName, temperature, modelType, options] = rest as [
        FunctionDef[],
        string | null,
        number,
        string | undefined,
        object | undefined,
      ];
      call = {
        prompt: structuredClone(prompt),
        functionDefs: structuredClone(functionDefs),
        requiredFunctionName,
        temperature,
        modelType,
        options,
        convention: 'positional',
      };
    } else {
      const [config, options] = rest as [GenerateConfig, object | undefined];
      call = {
        prompt: structuredClone(prompt),
        functionDefs: structuredClone(config.functionDefs ?? []),
        requiredFunctionName: config.requiredFunctionName ?? null,
        temperature: config.temperature ?? NaN,
        modelType: config.modelType,
        options,
        convention: 'config',
        expectedResponseType: config.expectedResponseType,
      };
    }
    this.calls.push(call);
    const answer = this.queue.shift() ?? this.otherwise?.(call);
    if (answer === undefined) throw new Error(`ScriptedModel: no answer left for call ${this.calls.length}`);
    if (answer instanceof Error) throw answer;
    const calls = typeof answer === 'function' ? await answer(call) : answer;
    if (!Array.isArray(calls)) return positional ? [] : [{ type: 'text', text: calls.text }];
    return positional ? calls : calls.map((functionCall) => ({ type: 'functionCall', functionCall }));
  };

  /** The function names offered in each call. */
  offered(): string[][] {
    return this.calls.map((c) => c.functionDefs.map((d) => d.name));
  }

  /** The texts of a call's user items, joined. */
  static userText(call: GenerateCall): string {
    return call.prompt
      .filter((p) => p.type === 'user')
      .map((p) => p.text ?? '')
      .join('\n');
  }
}

/** The askQuestion call that chose an action, as GenAIcode 0.9.5 passes it. */
export function askQuestionCall(action: string, message = `I will use ${action}.`): NonNullable<ActionHandlerProps['askQuestionCall']> {
  return { id: 'ask-1', name: 'askQuestion', args: { actionType: `plugin:${action}`, message } };
}

/** The conversation so far, as GenAIcode hands it to a handler. */
export const CONVERSATION: PromptItem[] = [
  { type: 'systemPrompt', systemPrompt: 'You are GenAIcode.' },
  { type: 'user', text: 'Check that the project builds in a sandbox.' },
];

/** Hand-built ActionHandlerProps for one action, answered by `model`. */
export function handlerProps(action: string, model: ScriptedModel, over: Partial<ActionHandlerProps> = {}): ActionHandlerProps {
  return {
    askQuestionCall: askQuestionCall(action),
    prompt: CONVERSATION,
    options: { marker: `codegen-options-${action}` },
    generateContentFn: model.generateContentFn,
    waitIfPaused: async () => undefined,
    ...over,
  };
}
