import type { z } from 'zod/v4';
import { describeIssues } from '../../../../function-def.js';
import type { ActionHandlerProps, AskQuestionArgs, FunctionCall, FunctionDef, PromptItem } from '../../../host/genaicode-types.js';

/** The askQuestion call that chose this action (0.9.5: askQuestionCall; later: iterateCall). */
export function actionCall(props: ActionHandlerProps): FunctionCall<AskQuestionArgs> {
  return props.askQuestionCall ?? props.iterateCall ?? { name: 'askQuestion', args: { actionType: '', message: '' } };
}

type ArgsOutcome<T> = { ok: true; args: T; call: FunctionCall } | { ok: false; error: string; call: FunctionCall };

/**
 * Asks the model for the arguments of one action, through ONE function definition named
 * as the action. `requiredFunctionName` stays null: genaicode 0.9.5 validates a required
 * name against its own definitions and rejects plugin-only ones (services still force a
 * tool call when given a single definition). Arguments are validated with zod; an invalid
 * answer gets one retry with the validation error shown to the model.
 */
export async function requestArgs<S extends z.ZodTypeAny>(
  props: ActionHandlerProps,
  def: FunctionDef,
  schema: S,
  modelType: string,
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
    const calls = await props.generateContentFn(prompt, [def], null, 0.2, modelType, props.options);
    const call = calls.find((c) => c.name === def.name);
    if (!call) {
      lastError = `expected a call to ${def.name}, got ${calls.map((c) => c.name).join(', ') || 'none'}`;
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
