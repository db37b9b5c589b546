import type { ActionHandlerProps } from './host/genaicode-types.js';
import type { HostServices } from './host/host-services.js';
import type { TaskModel } from '../task/task-model.js';

/**
 * The task loop's model port on the running GenAIcode: steps on the cheapest tier
 * (LITE where the host has it, else CHEAP), the summary on the default tier. Each call is
 * a standalone prompt, not the conversation, so it costs only what the loop sends.
 */
export function genaicodeTaskModel(props: ActionHandlerProps, host: HostServices): TaskModel {
  return {
    call: (tier, request) =>
      props.generateContentFn(
        [
          { type: 'systemPrompt', systemPrompt: request.system },
          { type: 'user', text: request.prompt },
        ],
        request.functions,
        null,
        0.2,
        tier === 'step' ? host.liteModel : host.defaultModel,
        props.options,
      ),
  };
}
