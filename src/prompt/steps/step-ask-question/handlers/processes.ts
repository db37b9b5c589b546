import type { ActionHandler } from '../../../host/genaicode-types.js';
import type { PluginRuntime } from '../../../plugin-runtime.js';
import { actionListLine } from '../../../../actions/action-spec.js';
import { PROCESS_ACTIONS } from '../../../../actions/process-actions.js';
import { noSuchContainer } from '../../../../actions/answers.js';
import { defineAction } from './define-action.js';

/** The background-process actions (actions/process-specs.ts), each with its body from actions/process-actions.ts. */
export function createProcessHandlers(runtime: PluginRuntime): Record<string, { handler: ActionHandler; description: string }> {
  const handlers: Record<string, { handler: ActionHandler; description: string }> = {};
  for (const { spec, run } of PROCESS_ACTIONS) {
    const handler = defineAction(runtime, spec, async ({ args, reply }) => {
      // Every process action's schema has containerId (a string): the list's type cannot say so.
      const containerId = String(args.containerId);
      const sandbox = runtime.manager().get(containerId);
      if (!sandbox) throw noSuchContainer(runtime.manager(), containerId);
      const { answer, userText } = await run(sandbox, args);
      return reply(answer, userText);
    });
    handlers[spec.name] = { handler, description: actionListLine(spec) };
  }
  return handlers;
}
