import type { ActionHandlerProps } from './host/genaicode-types.js';
import type { HostServices } from './host/host-services.js';
import type { TaskModel } from '../task/task-model.js';
import { callModel } from './host/model-call.js';

/**
 * The task loop's model port on the running GenAIcode: steps on the cheapest tier
 * (LITE where the host has it, else CHEAP), the summary on the default tier. Each call is
 * a standalone prompt, not the conversation, so it costs only what the loop sends.
 */
export function genaicodeTaskModel(props: ActionHandlerProps, host: HostServices): TaskModel {
  return {
    call: async (tier, request) =>
      (
        await callModel(host.profile, props.generateContentFn, props.options, {
          prompt: [
            { type: 'systemPrompt', systemPrompt: request.system },
            { type: 'user', text: request.prompt },
          ],
          functionDefs: request.functions,
          tier: tier === 'step' ? 'lite' : 'default',
          temperature: 0.2,
        })
      ).calls,
  };
}
