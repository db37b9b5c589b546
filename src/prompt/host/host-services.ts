import { swallowed } from '../../debug.js';
import { runningHost, type HostProfile } from './host-profile.js';

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
   * Calls `listener` when a conversation ends by a step that ends the dispatcher's loop
   * (the model's endConversation that the user confirmed, or a hand-off to code
   * generation), with that conversation's prompt (the array every handler of it gets).
   */
  onConversationEnd(listener: (conversation: object) => Promise<void>): void;
  /** Which GenAIcode this is: how its model is called, its dispatcher's name, its tiers. */
  readonly profile: HostProfile;
}

interface GenaicodeRoot {
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

/** One of the host's modules: the instance the host itself runs, or by package name outside a located host. */
function hostImport(profile: HostProfile, path: string): Promise<unknown> {
  return import(profile.moduleUrl(path) ?? (path === 'index.js' ? 'genaicode' : `genaicode/${path}`));
}

/**
 * GenAIcode has no conversation-end hook for plugins. Its built-in handlers of the
 * dispatcher's loop (askQuestion in 0.9.5, iterate in 1.x) live in one exported, mutable
 * table, looked up at each step: each is wrapped once, and a result that ends the loop
 * (breakLoop) calls the listeners before the step returns. Returns false when this host has
 * no such table where we look (a later host that moved it again).
 */
async function watchConversationEnds(profile: HostProfile): Promise<boolean> {
  if (!profile.handlerTable) return false;
  try {
    // The loop's own module registers the built-in handlers when it loads.
    await hostImport(profile, profile.handlerTable.loop);
    const { handlers } = (await hostImport(profile, profile.handlerTable.table)) as { handlers?: Record<string, BuiltinHandler> };
    if (typeof handlers !== 'object' || handlers === null || Object.keys(handlers).length === 0) return false;
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
    return true;
  } catch (e) {
    swallowed('watching for the end of conversations', e);
    return false;
  }
}

let cached: Promise<HostServices> | undefined;

export function genaicodeHost(profile: HostProfile = runningHost()): Promise<HostServices> {
  cached ??= (async () => {
    const root = (await hostImport(profile, 'index.js')) as GenaicodeRoot;
    let abortModule: AbortModule | undefined;
    try {
      abortModule = (await hostImport(profile, 'main/common/abort-controller.js')) as AbortModule;
    } catch (e) {
      abortModule = undefined; // a host without it: commands still end by their timeouts
      swallowed('genaicode abort controller', e);
    }
    if (!(await watchConversationEnds(profile))) {
      root.putSystemMessage?.(
        `genaicode-docker: cannot see when a conversation ends in ${profile.name} (its built-in handler table is not where ` +
          `this plugin looks). Containers are removed when GenAIcode exits, when they expire, or by stopContainer.`,
      );
    }
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
      profile,
    };
  })();
  return cached;
}
