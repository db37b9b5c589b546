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
      liteModel: types.LITE ?? types.CHEAP ?? 'cheap',
      cheapModel: types.CHEAP ?? 'cheap',
      defaultModel: types.DEFAULT ?? 'default',
    };
  })();
  return cached;
}
