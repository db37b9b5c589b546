import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { OutputSummarizer } from '../answer/command-answer.js';
import { summarizePrompt } from '../actions/summarize-prompt.js';
import type { FunctionCall } from '../function-def.js';
import type { ModelRequest, TaskModel } from '../task/task-model.js';

/**
 * The client's own model, through MCP sampling (`sampling/createMessage`): the client
 * chooses the model and may show the request to its user first. Used only when the client
 * says it offers sampling; otherwise summaries are extractive and the task needs Gemini.
 */

/** Whether the client connected to `server` offers sampling. */
export function clientSamples(server: Server): boolean {
  return server.getClientCapabilities()?.sampling !== undefined;
}

async function sampleText(
  server: Server,
  request: { system: string; prompt: string; maxTokens: number; cheap: boolean },
  signal?: AbortSignal,
): Promise<string> {
  const result = await server.createMessage(
    {
      messages: [{ role: 'user', content: { type: 'text', text: request.prompt } }],
      systemPrompt: request.system,
      maxTokens: request.maxTokens,
      temperature: 0.2,
      // A hint only: the client picks. Summaries and steps want its cheap, fast model.
      modelPreferences: request.cheap
        ? { costPriority: 1, speedPriority: 0.8, intelligencePriority: 0.2 }
        : { costPriority: 0.3, speedPriority: 0.3, intelligencePriority: 0.8 },
    },
    signal ? { signal } : {},
  );
  const content = Array.isArray(result.content) ? result.content : [result.content];
  const text = content
    .map((c) => (c.type === 'text' ? c.text : ''))
    .join('')
    .trim();
  if (!text) throw new Error('the client model answered with no text');
  return text;
}

/** The summary of a long output from the client's model (the same prompt the GenAIcode plugin sends). */
export function samplingSummarizer(server: Server): OutputSummarizer {
  return (input, signal) =>
    sampleText(
      server,
      {
        system: 'You summarize shell command output for a coding assistant. Be factual; quote error messages exactly.',
        prompt: summarizePrompt(input),
        maxTokens: 400,
        cheap: true,
      },
      signal,
    );
}

/**
 * The first JSON object in a text: a model asked for one object may still wrap it in a
 * code fence or a sentence.
 */
export function firstJsonObject(text: string): unknown {
  for (let start = text.indexOf('{'); start !== -1; start = text.indexOf('{', start + 1)) {
    let depth = 0;
    let inString = false;
    for (let i = start; i < text.length; i++) {
      const c = text[i];
      if (inString) {
        if (c === '\\') i++;
        else if (c === '"') inString = false;
      } else if (c === '"') inString = true;
      else if (c === '{') depth++;
      else if (c === '}' && --depth === 0) {
        try {
          return JSON.parse(text.slice(start, i + 1)) as unknown;
        } catch {
          break; // not JSON from this brace: try the next one
        }
      }
    }
  }
  return undefined;
}

/** The answer read as one function call, or none (the task loop says what was wrong and asks again). */
export function callFromText(text: string, names: string[]): FunctionCall[] {
  const value = firstJsonObject(text);
  if (typeof value !== 'object' || value === null) return [];
  const { name, args } = value as { name?: unknown; args?: unknown };
  if (typeof name !== 'string' || !names.includes(name)) return [];
  return [{ name, args: typeof args === 'object' && args !== null ? (args as Record<string, unknown>) : {} }];
}

/**
 * The task loop's model port on the client's model. Sampling has no function calling that
 * clients support widely, so the functions are given as JSON Schema and the answer is one
 * JSON object naming one of them; the loop validates its arguments as for any model.
 */
export function samplingTaskModel(server: Server): TaskModel {
  return {
    async call(tier: 'step' | 'summary', request: ModelRequest, signal?: AbortSignal): Promise<FunctionCall[]> {
      const functions = request.functions
        .map((f) => `- ${f.name}: ${f.description}\n  arguments (JSON Schema): ${JSON.stringify(f.parameters)}`)
        .join('\n');
      const text = await sampleText(
        server,
        {
          system: request.system,
          prompt:
            `${request.prompt}\n\nAnswer with exactly one JSON object and nothing else: {"name": <one of the functions below>, "args": {...}}.\n` +
            `Functions:\n${functions}`,
          maxTokens: tier === 'step' ? 1000 : 800,
          cheap: tier === 'step',
        },
        signal,
      );
      return callFromText(
        text,
        request.functions.map((f) => f.name),
      );
    },
  };
}
