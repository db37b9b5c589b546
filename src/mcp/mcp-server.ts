import type { Readable, Writable } from 'node:stream';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { CallToolRequestSchema, ListToolsRequestSchema, type Tool } from '@modelcontextprotocol/sdk/types.js';
import { actionFunctionDef } from '../actions/action-spec.js';
import { debug, swallowed } from '../debug.js';
import { SandboxError } from '../errors.js';
import { GeminiTaskModel } from '../task/gemini-model.js';
import type { TaskModel } from '../task/task-model.js';
import { PACKAGE_VERSION } from '../version.js';
import { clientSamples, samplingSummarizer, samplingTaskModel } from './client-model.js';
import { createMcpRuntime, type McpRuntimeOptions } from './mcp-runtime.js';
import type { ToolContext } from './mcp-tool.js';
import { errorOutcome, toolResult } from './tool-result.js';
import { MCP_TOOLS } from './tools.js';

/** What the client's model reads once, at the start: how the tools fit together. */
const INSTRUCTIONS =
  "Hardened Docker sandboxes. startContainer (project: 'ro' or 'rw' mounts the user's project at the working folder), " +
  'then runCommand, the file tools and stopContainer when done; codeExecute runs a Python or bash snippet without a container to manage. ' +
  'Long output comes as a summary with verbatim keyLines; readLog reads any lines of the full log (logPath).';

/** How long the end waits for canceled calls to finish (a command's tree kill gives up after 5 s). */
const CANCELED_CALLS_GRACE_MS = 6000;

export interface McpServerOptions extends McpRuntimeOptions {
  input?: Readable;
  output?: Writable;
  /** How often the client process is checked to still be there. @default 1000 */
  parentCheckMs?: number;
  /** A sentence for the person reading the client's server log (stderr). */
  log?: (line: string) => void;
}

/**
 * `genaicode-docker mcp`: a stdio MCP server over the sandboxes, on the official SDK (its
 * low-level Server: the tools' arguments are validated here, with the action's own schema,
 * so a bad argument is an `isError` result with INVALID_ARGUMENT like every other failure).
 * Resolves when the server has ended: its input closed, the client gone or a signal, with
 * every container it started removed.
 */
export async function runMcpServer(options: McpServerOptions = {}): Promise<string> {
  const runtime = createMcpRuntime(options);
  const env = options.env ?? process.env;
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  // The low-level Server, not McpServer: McpServer checks the arguments itself and answers a
  // bad one with its own text, where ours is an isError result with a closed code.
  const server = new Server(
    { name: 'genaicode-docker', version: PACKAGE_VERSION },
    { capabilities: { tools: {} }, instructions: INSTRUCTIONS },
  );

  const geminiKey = env.GEMINI_API_KEY ?? env.GOOGLE_API_KEY;
  let gemini: TaskModel | undefined;
  const taskModel = (): TaskModel | undefined => {
    if (geminiKey)
      return (gemini ??= new GeminiTaskModel({ apiKey: geminiKey, ...(env.GEMINI_BASE_URL ? { baseUrl: env.GEMINI_BASE_URL } : {}) }));
    return clientSamples(server) ? samplingTaskModel(server) : undefined;
  };

  server.setRequestHandler(ListToolsRequestSchema, () => {
    const config = runtime.config;
    const model = taskModel();
    const tools: Tool[] = MCP_TOOLS.filter((t) => t.available?.({ taskModel: model }) ?? true).map((t) => {
      const def = actionFunctionDef(t.spec, config);
      return {
        name: t.spec.name,
        description: `${def.description} Returns ${t.spec.returns}.${t.spec.note ? ` ${t.spec.note}` : ''}`,
        // Each property is a JSON Schema object (function-def.ts makes them from zod).
        inputSchema: { ...def.parameters, properties: def.parameters.properties as Record<string, object> },
        annotations: t.annotations(config),
      };
    });
    return { tools };
  });

  const ending = new AbortController();
  const inFlight = new Set<Promise<unknown>>();
  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const received = performance.now();
    const tool = MCP_TOOLS.find((t) => t.spec.name === request.params.name);
    const ctx: ToolContext = {
      runtime,
      signal: AbortSignal.any([extra.signal, ending.signal]),
      summarizer: clientSamples(server) ? samplingSummarizer(server) : undefined,
      taskModel: taskModel(),
    };
    let toolMs = 0;
    const run = (async () => {
      if (!tool || !(tool.available?.(ctx) ?? true))
        throw new SandboxError('INVALID_ARGUMENT', `No tool ${JSON.stringify(request.params.name)} here: tools/list names them.`, {
          data: { tool: request.params.name },
        });
      if (ending.signal.aborted) throw new SandboxError('ABORTED', 'The server is ending: its containers are being removed.');
      const began = performance.now();
      try {
        return await tool.call(request.params.arguments, ctx);
      } finally {
        toolMs = performance.now() - began;
      }
    })().catch((e: unknown) => {
      debug('tool %s failed: %s', request.params.name, e instanceof Error ? (e.stack ?? e.message) : String(e));
      return errorOutcome(e);
    });
    inFlight.add(run);
    try {
      const result = toolResult(await run);
      // What the server adds around the tool's own work, for bench/mcp.mjs and for a slow call.
      debug(
        'tool %s: %s ms in the tool, %s ms in the server',
        request.params.name,
        toolMs.toFixed(3),
        (performance.now() - received).toFixed(3),
      );
      return result;
    } finally {
      inFlight.delete(run);
    }
  });

  let finish!: (why: string) => void;
  const ended = new Promise<string>((resolve) => (finish = resolve));
  let ending$: Promise<void> | undefined;
  const end = (why: string): Promise<void> =>
    (ending$ ??= (async () => {
      debug('mcp server ending: %s', why);
      ending.abort();
      const grace = new Promise((resolve) => setTimeout(resolve, CANCELED_CALLS_GRACE_MS).unref());
      await Promise.race([Promise.allSettled(inFlight), grace]);
      if (runtime.started())
        await runtime
          .manager()
          .stopAll()
          .catch((e: unknown) => swallowed('removing the containers at the end', e));
      await server.close().catch((e: unknown) => swallowed('closing the MCP transport', e));
      finish(why);
    })());

  const input = options.input ?? process.stdin;
  const output = options.output ?? process.stdout;
  // The client closing our input is the end of the session; so is the client dying, which
  // closes it too, unless a child of the client still holds the pipe: the parent is watched.
  input.once('end', () => void end('input closed'));
  input.once('close', () => void end('input closed'));
  const parent = process.ppid;
  const watch = setInterval(() => {
    if (process.ppid !== parent) void end('client process gone');
  }, options.parentCheckMs ?? 1000);
  watch.unref();
  const onSignal = (signal: NodeJS.Signals) => void end(signal);
  for (const s of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.once(s, onSignal);

  await server.connect(new StdioServerTransport(input, output));
  log(`genaicode-docker mcp ${PACKAGE_VERSION}: project ${runtime.config.projectRoot}, logs in ${runtime.config.logs.dir}`);
  try {
    return await ended;
  } finally {
    clearInterval(watch);
    for (const s of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.off(s, onSignal);
  }
}
