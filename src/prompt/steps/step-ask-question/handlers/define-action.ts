import type { z } from 'zod/v4';
import type { ActionHandler, ActionHandlerProps, ActionResult } from '../../../host/genaicode-types.js';
import type { HostServices } from '../../../host/host-services.js';
import type { PluginRuntime } from '../../../plugin-runtime.js';
import { debug, swallowed } from '../../../../debug.js';
import { actionResult, guarded } from './action-answer.js';
import { actionFunctionDef, type ActionSpec } from '../../../../actions/action-spec.js';
import { actionCall, requestArgs } from './structured-args.js';

interface ActionContext<A> {
  /** The model's arguments, validated. */
  args: A;
  host: HostServices;
  props: ActionHandlerProps;
  /** The step's answer to the model (paired with its call) and the line the user sees. */
  reply(answer: object, userText: string, isError?: boolean): ActionResult;
}

/**
 * What every action shares: never throw out of the handler, ask the model for the
 * arguments through one function definition, answer INVALID_ARGUMENT when they stay
 * invalid after the retry, and pair every answer (errors included) with the model's call.
 */
export function defineAction<S extends z.ZodObject>(
  runtime: PluginRuntime,
  spec: ActionSpec<S>,
  body: (ctx: ActionContext<z.output<S>>) => Promise<ActionResult>,
): ActionHandler {
  return async (props) => {
    const result = await guarded(props, spec.name, async (step) => {
      const host = await runtime.host();
      const message = actionCall(props).args?.message ?? '';
      const got = await requestArgs(props, actionFunctionDef(spec, runtime.config()), spec.args, host.profile);
      debug('action %s: %s', spec.name, got.ok ? JSON.stringify(got.args).slice(0, 500) : `invalid arguments: ${got.error}`);
      if (!got.ok) return actionResult(message, got.call, { error: got.error, code: 'INVALID_ARGUMENT' }, got.error, true);
      step.call = got.call;
      const call = got.call;
      return body({
        args: got.args,
        host,
        props,
        reply: (answer, userText, isError = false) => actionResult(message, call, answer, userText, isError),
      });
    });
    await reportIfInterrupted(runtime, result);
    return result;
  };
}

/**
 * Interrupted: a host that drops the step's result (1.x) would leave the user without its
 * outcome (a killed command and its log, an error): it is said as a system message instead.
 */
async function reportIfInterrupted(runtime: PluginRuntime, result: ActionResult): Promise<void> {
  const text = result.items.at(-1)?.user.text;
  if (!text) return;
  try {
    const host = await runtime.host();
    if (host.abortSignal()?.aborted && !host.profile.showsResultAfterAbort) host.systemMessage(text);
  } catch (e) {
    swallowed('reporting an interrupted step', e);
  }
}
