import { swallowed } from '../debug.js';
import type { CodeExecutor } from './code-executor.js';

/**
 * codeExecute's executors, one per conversation: a kept-alive sandbox holds whatever the
 * snippets of its conversation left in it (a `json.py` in the working folder, a process
 * left running), so no other conversation may run in it. Each is retired (its container
 * removed) when its conversation ends.
 */
export class CodeExecutors {
  private readonly byConversation = new Map<object, CodeExecutor>();

  constructor(private readonly make: () => CodeExecutor) {}

  /** The executor of `conversation`, made at its first call. */
  for(conversation: object): CodeExecutor {
    let executor = this.byConversation.get(conversation);
    if (!executor) this.byConversation.set(conversation, (executor = this.make()));
    return executor;
  }

  /** Conversations with an executor (for tests and the status line). */
  get size(): number {
    return this.byConversation.size;
  }

  /** Retires the executor of `conversation`: its kept-alive container is removed. A later call of the same conversation gets a new one. */
  async end(conversation: object): Promise<void> {
    const executor = this.byConversation.get(conversation);
    if (!executor) return;
    this.byConversation.delete(conversation);
    await executor.shutdown().catch((e: unknown) => swallowed('retiring the code sandbox of a conversation', e));
  }
}
