import { z } from 'zod/v4';
import { showInvisible } from '../display-text.js';
import { functionDef } from '../function-def.js';
import type { ActionHandlerProps } from './host/genaicode-types.js';
import type { HostProfile } from './host/host-profile.js';
import { callModel } from './host/model-call.js';
import type { OutputSummarizer } from '../answer/command-answer.js';
import { summarizePrompt } from '../actions/summarize-prompt.js';

const SummaryArgs = z.object({
  summary: z.string().min(1).describe('The summary, as long as the request asks (at most about 200 tokens).'),
});
const SUMMARIZE_OUTPUT_DEF = functionDef('summarizeOutput', 'Give the concise summary of the command output.', SummaryArgs);

/** The lite-model summarizer: one standalone call (not the whole conversation), one function definition. */
export function liteModelSummarizer(host: HostProfile, props: Pick<ActionHandlerProps, 'generateContentFn' | 'options'>): OutputSummarizer {
  return async (input) => {
    const { calls } = await callModel(host, props.generateContentFn, props.options, {
      prompt: [
        {
          type: 'systemPrompt',
          systemPrompt: 'You summarize shell command output for a coding assistant. Be factual; quote error messages exactly.',
        },
        { type: 'user', text: showInvisible(summarizePrompt(input)) },
      ],
      functionDefs: [SUMMARIZE_OUTPUT_DEF],
      tier: 'lite',
      temperature: 0.2,
    });
    const call = calls.find((c) => c.name === SUMMARIZE_OUTPUT_DEF.name);
    const parsed = SummaryArgs.safeParse(call?.args);
    if (!parsed.success) throw new Error('the summarizer did not return summarizeOutput { summary }');
    return parsed.data.summary;
  };
}
