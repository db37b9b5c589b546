import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { showInvisibleIn } from '../display-text.js';
import { isSandboxError } from '../errors.js';
import type { ToolOutcome } from './mcp-tool.js';

/**
 * The most characters of one copy of an answer. A result carries it twice (JSON text and
 * structuredContent), and Claude Code refuses a result over 25,000 tokens by default: 40,000
 * characters a copy stays under that at the usual 3.5 or more characters per token, and
 * holds a whole default read (files.maxReadBytes, 32 KiB) with its line numbers.
 */
export const MAX_ANSWER_CHARS = 40_000;

/** Where a string sits in an answer: the object or array holding it, and its key. */
interface Slot {
  holder: Record<string, unknown> | unknown[];
  key: string | number;
  length: number;
}

function stringSlots(value: unknown, slots: Slot[] = []): Slot[] {
  if (Array.isArray(value))
    value.forEach((v, i) => (typeof v === 'string' ? slots.push({ holder: value, key: i, length: v.length }) : stringSlots(v, slots)));
  else if (typeof value === 'object' && value !== null)
    for (const [k, v] of Object.entries(value))
      if (typeof v === 'string') slots.push({ holder: value as Record<string, unknown>, key: k, length: v.length });
      else stringSlots(v, slots);
  return slots;
}

/**
 * The answer cut to fit `max` characters of JSON: the longest strings are shortened first,
 * each with a marker saying how much went (the full text is in the log, or in a smaller
 * read). The answers are capped where they are made; this is the last guard, for settings
 * that allow more than a client takes.
 */
export function fitAnswer(answer: Record<string, unknown>, max = MAX_ANSWER_CHARS): Record<string, unknown> {
  let size = JSON.stringify(answer).length;
  if (size <= max) return answer;
  const copy = structuredClone(answer);
  for (let round = 0; size > max && round < 64; round++) {
    const longest = stringSlots(copy).sort((a, b) => b.length - a.length)[0];
    if (!longest || longest.length < 200) break;
    const text = (longest.holder as Record<string | number, string>)[longest.key]!;
    const keep = Math.max(100, longest.length - (size - max) - 120);
    const cutText = `${text.slice(0, keep)}\n[cut: ${text.length - keep} more characters, over the client's limit for one result]`;
    (longest.holder as Record<string | number, unknown>)[longest.key] = cutText;
    size = JSON.stringify(copy).length;
  }
  return copy;
}

/** A tool's outcome as MCP's result: the same fields as JSON text and as structuredContent. */
export function toolResult(outcome: ToolOutcome): CallToolResult {
  const answer = fitAnswer(showInvisibleIn(outcome.answer));
  return {
    content: [{ type: 'text', text: JSON.stringify(answer) }],
    structuredContent: answer,
    ...(outcome.isError ? { isError: true } : {}),
  };
}

/** Anything a tool threw, as the structured error `{ error, code }` (code from the closed set). */
export function errorOutcome(e: unknown): ToolOutcome {
  const answer = isSandboxError(e) ? e.toJSON() : { error: e instanceof Error ? e.message : String(e), code: 'INTERNAL_ERROR' };
  return { answer, userText: answer.error, isError: true };
}
