import type { Sandbox } from '../sandbox/sandbox.js';
import { swallowed } from '../debug.js';

/**
 * The containers each GenAIcode conversation started (the seed's task-scoped lifetime): they
 * are removed when the conversation ends, by a step that ends it (HostServices
 * onConversationEnd) or by the user's interrupt (its abort signal), unless the model asked
 * to keep them. Each removal that fails is reported; the exit hook and the container's
 * expiry still remove it.
 */
/** How long a removal after an interrupt waits for the canceled command to end (its tree kill gives up after 5 s). */
const INTERRUPTED_COMMAND_GRACE_MS = 6000;

export class ConversationContainers {
  private readonly byConversation = new Map<object, Set<Sandbox>>();
  private readonly watched = new WeakMap<object, AbortSignal>();

  /** `alsoEnd`: what else a conversation's end retires (codeExecute's sandbox of that conversation). */
  constructor(
    private readonly report: (text: string) => void,
    private readonly alsoEnd: (conversation: object) => Promise<void> = () => Promise.resolve(),
  ) {}

  track(conversation: object, sandbox: Sandbox, signal?: AbortSignal): void {
    let set = this.byConversation.get(conversation);
    if (!set) this.byConversation.set(conversation, (set = new Set()));
    set.add(sandbox);
    this.watch(conversation, signal);
  }

  /** Ends `conversation` when `signal` (the user's interrupt) aborts. */
  watch(conversation: object, signal?: AbortSignal): void {
    if (signal && this.watched.get(conversation) !== signal) {
      this.watched.set(conversation, signal);
      if (signal.aborted) return;
      signal.addEventListener('abort', () => void this.end(conversation, 'interrupted'), { once: true });
    }
  }

  /** Containers of `conversation` still tracked (for tests and the status line). */
  of(conversation: object): Sandbox[] {
    return [...(this.byConversation.get(conversation) ?? [])];
  }

  /** Removes the conversation's containers; resolves when each is removed or reported. */
  async end(conversation: object, how: 'ended' | 'interrupted' = 'ended'): Promise<{ removed: string[]; failed: string[] }> {
    const set = this.byConversation.get(conversation);
    this.byConversation.delete(conversation);
    const removed: string[] = [];
    const failed: string[] = [];
    const others = this.alsoEnd(conversation).catch((e: unknown) => swallowed('ending what else the conversation had', e));
    await Promise.all(
      [...(set ?? [])].map(async (s) => {
        if (s.isStopped) return; // stopped by the model already
        try {
          // An interrupt cancels the running command too: its tree is killed and its log closed first.
          if (how === 'interrupted') await s.whenIdle(INTERRUPTED_COMMAND_GRACE_MS);
          await s.stop();
          removed.push(s.name);
        } catch (e) {
          swallowed(`removing ${s.name} at the end of its conversation`, e);
          failed.push(`${s.name} (${e instanceof Error ? e.message : String(e)})`);
        }
      }),
    );
    await others;
    try {
      if (removed.length) this.report(`genaicode-docker: the conversation ${how}; removed container ${removed.sort().join(', ')}.`);
      if (failed.length)
        this.report(
          `genaicode-docker: the conversation ${how}, but container ${failed.join(', ')} could not be removed; it is removed when GenAIcode exits or at its expiry.`,
        );
    } catch (e) {
      swallowed('reporting the end of a conversation', e);
    }
    return { removed, failed };
  }
}
