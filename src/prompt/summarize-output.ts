import { z } from 'zod';
import type { FunctionDef, GenerateContentFunction } from './host/genaicode-types.js';
import type { OutputSummarizer } from '../answer/command-answer.js';

const SUMMARIZE_OUTPUT_DEF: FunctionDef = {
  name: 'summarizeOutput',
  description: 'Give the concise summary of the command output.',
  parameters: {
    type: 'object',
    properties: { summary: { type: 'string', description: 'About 200 tokens: errors, failures and important results.' } },
    required: ['summary'],
  },
};

const SummaryArgs = z.object({ summary: z.string().min(1) });

/** The summarizer prompt (~200 tokens asked), with the command and its exit as context. */
function summarizePrompt(input: { command: string; exitCode: number; output: string; reason?: string }): string {
  return (
    `Command: ${input.command}\nExit code: ${input.exitCode}${input.reason ? ` (${input.reason})` : ''}\n\n` +
    `Summarize concisely, noting errors, failures, and important results (~200 tokens):\n\n${input.output}`
  );
}

/** The lite-model summarizer: one standalone call (not the whole conversation), one function definition. */
export function liteModelSummarizer(generateContentFn: GenerateContentFunction, modelType: string, hostOptions: object): OutputSummarizer {
  return async (input) => {
    const calls = await generateContentFn(
      [
        {
          type: 'systemPrompt',
          systemPrompt: 'You summarize shell command output for a coding assistant. Be factual; quote error messages exactly.',
        },
        { type: 'user', text: summarizePrompt(input) },
      ],
      [SUMMARIZE_OUTPUT_DEF],
      null,
      0.2,
      modelType,
      hostOptions,
    );
    const call = calls.find((c) => c.name === SUMMARIZE_OUTPUT_DEF.name);
    const parsed = SummaryArgs.safeParse(call?.args);
    if (!parsed.success) throw new Error('the summarizer did not return summarizeOutput { summary }');
    return parsed.data.summary;
  };
}
