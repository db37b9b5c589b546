import { swallowed } from '../../debug.js';

/**
 * What the handlers need from the running GenAIcode, behind a small interface: unit tests
 * pass their own; in GenAIcode, `genaicodeHost()` imports the host lazily (at first use,
 * never at plugin load: genaicode is still loading its config then).
 */
export interface HostServices {
  /** Asks the user; true when confirmed. */
  confirm(prompt: string, options: object): Promise<boolean>;
  /** A system message in the conversation view. */
  systemMessage(text: string, data?: unknown): void;
  /** The live interrupt signal (genaicode replaces its controller every iteration). */
  abortSignal(): AbortSignal | undefined;
  /**
   * Calls `listener` when a conversation ends by a step that ends the ask-question loop
   * (the model's endConversation that the user confirmed, or a hand-off to code
   * generation), with that conversation's prompt (the array every handler of it gets).
   */
  onConversationEnd(listener: (conversation: object) => Promise<void>): void;
  /** The cheapest model tier: 'lite' where the host has it, else 'cheap'. */
  readonly liteModel: string;
  readonly cheapModel: string;
  readonly defaultModel: string;
}

interface GenaicodeRoot {
  ModelType?: Record<string, string>;
  askUserForConfirmation?: (
    prompt: string,
    defaultValue: boolean,
    options: object,
    confirmLabel?: string,
    declineLabel?: string,
  ) => Promise<{ confirmed?: boolean }>;
  putSystemMessage?: (message: string, data?: unknown) => void;
}

interface AbortModule {
  abortController: AbortController | null;
}

type BuiltinHandler = ((props: { prompt?: unknown }) => Promise<{ breakLoop?: boolean } | undefined>) & { [WRAPPED]?: true };
const WRAPPED = Symbol.for('genaicode-docker.conversation-end');
const endListeners: Array<(conversation: object) => Promise<void>> = [];

/**
 * GenAIcode 0.9.5 has no conversation-end hook for plugins. Its built-in ask-question
 * handlers live in one exported, mutable table (step-ask-question-handlers.js), looked up
 * at each step: each is wrapped once, and a result that ends the loop (breakLoop) calls the
 * listeners before the step returns. A host without that table: containers are then
 * removed at exit or expiry (the listeners are never called).
 */
async function watchConversationEnds(): Promise<void> {
  try {
    // The loop's own module registers the built-in handlers when it loads.
    await import('genaicode/prompt/steps/step-ask-question/step-ask-question.js');
    const { handlers } = (await import('genaicode/prompt/steps/step-ask-question/step-ask-question-handlers.js')) as unknown as {
      handlers: Record<string, BuiltinHandler>;
    };
    for (const [type, handler] of Object.entries(handlers)) {
      if (typeof handler !== 'function' || handler[WRAPPED]) continue;
      const wrapped: BuiltinHandler = async (props) => {
        const result = await handler(props);
        if (result?.breakLoop && typeof props.prompt === 'object' && props.prompt !== null) {
          const conversation = props.prompt;
          for (const listener of endListeners) await listener(conversation).catch((e: unknown) => swallowed('conversation end', e));
        }
        return result;
      };
      wrapped[WRAPPED] = true;
      handlers[type] = wrapped;
    }
  } catch (e) {
    swallowed('watching for the end of conversations', e);
  }
}

let cached: Promise<HostServices> | undefined;

export function genaicodeHost(): Promise<HostServices> {
  cached ??= (async () => {
    const root = (await import('genaicode')) as unknown as GenaicodeRoot;
    let abortModule: AbortModule | undefined;
    try {
      abortModule = (await import('genaicode/main/common/abort-controller.js')) as unknown as AbortModule;
    } catch (e) {
      abortModule = undefined; // a host without it: commands still end by their timeouts
      swallowed('genaicode abort controller', e);
    }
    const types = root.ModelType ?? {};
    await watchConversationEnds();
    return {
      async confirm(prompt, options) {
        if (!root.askUserForConfirmation) return false;
        const r = await root.askUserForConfirmation(prompt, false, options, 'Start container', 'Do not start');
        return r.confirmed === true;
      },
      systemMessage(text, data) {
        root.putSystemMessage?.(text, data);
      },
      // Read on every call: the module's binding is replaced each iteration.
      abortSignal: () => abortModule?.abortController?.signal,
      onConversationEnd: (listener) => void endListeners.push(listener),
      liteModel: types.LITE ?? types.CHEAP ?? 'cheap',
      cheapModel: types.CHEAP ?? 'cheap',
      defaultModel: types.DEFAULT ?? 'default',
    };
  })();
  return cached;
}
