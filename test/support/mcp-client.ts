/**
 * The SDK's own MCP client, over stdio, against the built CLI (`genaicode-docker mcp`), in a
 * project folder of its own with its logs and config in temporary folders.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { CreateMessageRequestSchema, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { CLI } from './built-package.js';
import { tempDir } from './temp-dirs.js';

export interface McpSession {
  client: Client;
  transport: StdioClientTransport;
  /** The server's process id (its containers' owner label is `host:pid`). */
  serverPid: number;
  stderr: () => string;
  call(name: string, args?: Record<string, unknown>): Promise<CallToolResult>;
}

/** The environment of a server under test: no model key, state and config in temporary folders. */
export function serverEnv(extra: Record<string, string> = {}): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env))
    if (v !== undefined && !/^(GEMINI_API_KEY|GOOGLE_API_KEY|GENAICODE_DOCKER_)/.test(k)) env[k] = v;
  return { ...env, XDG_STATE_HOME: tempDir('gcd-mcp-state-'), XDG_CONFIG_HOME: tempDir('gcd-mcp-config-'), ...extra };
}

export async function connectMcp(
  options: {
    cwd?: string;
    env?: Record<string, string>;
    /** The client's model: offered as sampling when given. */
    sample?: (prompt: string, system: string | undefined) => string;
  } = {},
): Promise<McpSession> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [CLI, 'mcp'],
    cwd: options.cwd ?? tempDir('gcd-mcp-project-'),
    env: options.env ?? serverEnv(),
    stderr: 'pipe',
  });
  let stderr = '';
  transport.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
  const client = new Client({ name: 'genaicode-docker-tests', version: '1.0.0' }, { capabilities: options.sample ? { sampling: {} } : {} });
  const sample = options.sample;
  if (sample)
    client.setRequestHandler(CreateMessageRequestSchema, (request) => {
      const content = request.params.messages[0]?.content;
      const prompt = content && !Array.isArray(content) && content.type === 'text' ? content.text : '';
      return { model: 'scripted', role: 'assistant', content: { type: 'text', text: sample(prompt, request.params.systemPrompt) } };
    });
  await client.connect(transport);
  const serverPid = transport.pid;
  if (serverPid === null) throw new Error('the server process has no pid');
  return {
    client,
    transport,
    serverPid,
    stderr: () => stderr,
    call: async (name, args = {}) => (await client.callTool({ name, arguments: args })) as CallToolResult,
  };
}

/** The structured answer of a result, after checking that its text is the same fields as JSON. */
export function answerOf(result: CallToolResult): Record<string, unknown> {
  const first = result.content[0];
  if (first?.type !== 'text') throw new Error(`expected a text result, got ${JSON.stringify(result).slice(0, 300)}`);
  expect(JSON.parse(first.text)).toEqual(result.structuredContent);
  return result.structuredContent as Record<string, unknown>;
}
