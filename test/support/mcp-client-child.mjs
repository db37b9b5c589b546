// A client process to kill: connects to `genaicode-docker mcp` (the built CLI), starts a
// container, says so on stdout (one JSON line with the server's pid and the container's
// name), then runs a long command and waits. The test kills this process mid-command.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

const [cli] = process.argv.slice(2);
const transport = new StdioClientTransport({ command: process.execPath, args: [cli, 'mcp'], env: process.env, stderr: 'inherit' });
const client = new Client({ name: 'killed-client', version: '1.0.0' });
await client.connect(transport);
const started = await client.callTool({ name: 'startContainer', arguments: {} });
const { name } = started.structuredContent;
process.stdout.write(`${JSON.stringify({ serverPid: transport.pid, name })}\n`);
await client.callTool({ name: 'runCommand', arguments: { containerId: name, cmd: 'echo running; sleep 600' } }, undefined, {
  timeout: 900_000,
});
