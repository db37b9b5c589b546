import type { ActionHandlerProps, ActionResult, FunctionCall } from '../../../host/genaicode-types.js';
import { actionCall } from './structured-args.js';
import { debug } from '../../../../debug.js';
import { displayText, showInvisibleIn } from '../../../../display-text.js';
import { isSandboxError, type SandboxErrorCode } from '../../../../errors.js';

/** The structured error a model receives, `{ error, code }`: nothing throws out of a handler. */
interface ErrorAnswer {
  error: string;
  code: SandboxErrorCode;
  [key: string]: unknown;
}

function errorAnswer(e: unknown): ErrorAnswer {
  if (isSandboxError(e)) return e.toJSON();
  return { error: e instanceof Error ? e.message : String(e), code: 'INTERNAL_ERROR' };
}

/**
 * One conversation step: the assistant's call, and the user item carrying the answer as
 * a function response (what the model reads) plus a one-line text (what the user sees,
 * with control and invisible characters named: it may quote the model or a container).
 */
export function actionResult(message: string, call: FunctionCall, answer: object, userText: string, isError = false): ActionResult {
  return {
    breakLoop: false,
    items: [
      {
        assistant: { type: 'assistant', text: message, functionCalls: [call] },
        user: {
          type: 'user',
          text: displayText(userText, 2000),
          functionResponses: [
            { name: call.name, call_id: call.id, content: JSON.stringify(showInvisibleIn(answer)), ...(isError ? { isError: true } : {}) },
          ],
        },
      },
    ],
  };
}

/** Runs one handler body; anything thrown becomes a structured error answer (a throw would end genaicode's loop). */
export async function guarded(
  props: ActionHandlerProps,
  name: string,
  body: (step: { call?: FunctionCall }) => Promise<ActionResult>,
): Promise<ActionResult> {
  // The body records the model's call here once it has it, so an error answer is paired
  // with the call the model made (its arguments and id), not a made-up one.
  const step: { call?: FunctionCall } = {};
  try {
    return await body(step);
  } catch (e) {
    const answer = errorAnswer(e);
    debug('action %s answered %s: %s', name, answer.code, e instanceof Error ? (e.stack ?? e.message) : String(e));
    const call = step.call ?? { id: `${name}-error`, name, args: {} };
    return actionResult(actionCall(props).args?.message ?? '', call, answer, `${name} failed: ${answer.error}`, true);
  }
}
