import type { z } from 'zod/v4';
import { describeIssues } from '../../../../function-def.js';
import type { ActionHandlerProps, AskQuestionArgs, FunctionCall, FunctionDef, PromptItem } from '../../../host/genaicode-types.js';
import type { HostProfile } from '../../../host/host-profile.js';
import { callModel } from '../../../host/model-call.js';

/** The dispatcher's call that chose this action (0.9.5: askQuestionCall; 1.x: iterateCall). */
export function actionCall(props: ActionHandlerProps): FunctionCall<AskQuestionArgs> {
  return props.iterateCall ?? props.askQuestionCall ?? { name: 'askQuestion', args: { actionType: '', message: '' } };
}

type ArgsOutcome<T> = { ok: true; args: T; call: FunctionCall } | { ok: false; error: string; call: FunctionCall };

/**
 * Asks the model for the arguments of one action, through ONE function definition named
 * as the action, on the host's cheap tier (`callModel` speaks the host's convention).
 * Arguments are validated with zod; an invalid answer, or text instead of a call, gets one
 * retry with the problem shown to the model.
 */
export async function requestArgs<S extends z.ZodTypeAny>(
  props: ActionHandlerProps,
  def: FunctionDef,
  schema: S,
  host: HostProfile,
): Promise<ArgsOutcome<z.output<S>>> {
  const ask = actionCall(props);
  const prompt: PromptItem[] = [
    ...props.prompt,
    { type: 'assistant', text: ask.args?.message ?? '' },
    { type: 'user', text: `Yes. Call ${def.name} with the arguments for this step.` },
  ];
  let lastError = 'no answer';
  let lastCall: FunctionCall = { id: `${def.name}-0`, name: def.name, args: {} };
  for (let attempt = 0; attempt < 2; attempt++) {
    await props.waitIfPaused();
    const { calls, text } = await callModel(host, props.generateContentFn, props.options, {
      prompt,
      functionDefs: [def],
      tier: 'cheap',
      temperature: 0.2,
    });
    const call = calls.find((c) => c.name === def.name);
    if (!call) {
      const got = calls.map((c) => c.name).join(', ') || (text ? `text (${JSON.stringify(text.slice(0, 80))})` : 'none');
      lastError = `expected a call to ${def.name}, got ${got}`;
      prompt.push({ type: 'user', text: `That was not a call to ${def.name}. Call ${def.name} now.` });
      continue;
    }
    lastCall = { ...call, id: call.id ?? `${def.name}-${attempt}` };
    const parsed = schema.safeParse(call.args ?? {});
    if (parsed.success) return { ok: true, args: parsed.data as z.output<S>, call: lastCall };
    lastError = describeIssues(parsed.error);
    prompt.push(
      { type: 'assistant', functionCalls: [lastCall] },
      {
        type: 'user',
        text: `The arguments were invalid: ${lastError}. Call ${def.name} again with valid arguments.`,
        functionResponses: [
          { name: def.name, call_id: lastCall.id, content: JSON.stringify({ error: lastError, code: 'INVALID_ARGUMENT' }), isError: true },
        ],
      },
    );
  }
  return { ok: false, error: `Invalid ${def.name} arguments: ${lastError}`, call: lastCall };
}
