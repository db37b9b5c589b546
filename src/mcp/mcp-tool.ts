import type { ToolAnnotations } from '@modelcontextprotocol/sdk/types.js';
import type { z } from 'zod/v4';
import type { ActionSpec } from '../actions/action-spec.js';
import type { OutputSummarizer } from '../answer/command-answer.js';
import type { Config } from '../config/config-schema.js';
import { describeIssues } from '../function-def.js';
import type { TaskModel } from '../task/task-model.js';
import type { McpRuntime } from './mcp-runtime.js';

/** What a tool call gets besides its arguments. */
export interface ToolContext {
  runtime: McpRuntime;
  /** The client's cancellation of this call, or the server's end. */
  signal: AbortSignal;
  /** The client's model for long outputs, when it offers sampling; else the extractive summary. */
  summarizer: OutputSummarizer | undefined;
  /** The model of runContainerTask: Gemini where configured, else the client's through sampling. */
  taskModel: TaskModel | undefined;
}

/** A tool's answer: the fields (as structuredContent and as JSON text) and the line a person reads. */
export interface ToolOutcome {
  answer: Record<string, unknown>;
  userText: string;
  isError?: boolean;
}

/** One MCP tool: an action's spec (its schema, description and notes are the plugin's), its annotations, its body. */
export interface McpTool {
  spec: ActionSpec;
  /** Hints a client uses to decide whether to ask its user; some depend on the configuration. */
  annotations(config: Config): ToolAnnotations;
  /** Listed only when it can run (runContainerTask needs a model). */
  available?(ctx: Pick<ToolContext, 'taskModel'>): boolean;
  /** Validates the arguments with the spec's schema, then runs; may throw (the server answers the error). */
  call(rawArgs: unknown, ctx: ToolContext): Promise<ToolOutcome>;
}

export function mcpTool<S extends z.ZodObject>(
  spec: ActionSpec<S>,
  annotations: (config: Config) => ToolAnnotations,
  body: (args: z.output<S>, ctx: ToolContext) => Promise<ToolOutcome>,
  available?: McpTool['available'],
): McpTool {
  return {
    spec,
    annotations,
    ...(available ? { available } : {}),
    async call(rawArgs, ctx) {
      const parsed = await spec.args.safeParseAsync(rawArgs ?? {});
      if (!parsed.success) {
        const error = `Invalid arguments for ${spec.name}: ${describeIssues(parsed.error)}`;
        return { answer: { error, code: 'INVALID_ARGUMENT' }, userText: error, isError: true };
      }
      return body(parsed.data, ctx);
    },
  };
}
