#!/usr/bin/env node
// The MCP server's overhead, side by side in one run: a `true` command
//   - through MCP: the SDK's client calls runCommand on `genaicode-docker mcp` (the built
//     CLI, a child process over stdio), timed from the call to the answer it reads;
//   - through the library: Sandbox.exec and the same answer (buildCommandAnswer,
//     answerForModel) in this process;
// interleaved, each on its own container of the same image. Target: the median of the
// paired differences (MCP - library) <= 5 ms. Reference: a call answered without the engine
// (CONTAINER_NOT_FOUND), the protocol's round trip alone.
//
//   --quick   fewer rounds (a smoke run)
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';

const { SandboxManager } = await import('../dist/index.js');
const { answerForModel, buildCommandAnswer } = await import('../dist/answer/command-answer.js');
const { benchEngine } = await import('./bench-engine.mjs');
const { MINIMAL_IMAGE, fmtMs, interleave, loadAvg, median, p90, rmQuiet, tempDir } = await import('./lib.mjs');

const QUICK = process.argv.includes('--quick');
const ROUNDS = QUICK ? 15 : 60;
const CLI = fileURLToPath(new URL('../dist/cli/main.js', import.meta.url));

const tmp = tempDir('gcd-mcp-bench-');
const { config } = benchEngine(tmp);
const manager = new SandboxManager({ config, sweepOnStart: false });
// The server gets the same settings: the engine's address only, its logs under tmp.
const env = Object.fromEntries(
  Object.entries(process.env).filter(
    ([k]) => !k.startsWith('GENAICODE_DOCKER_') || k === 'GENAICODE_DOCKER_HOST' || k === 'GENAICODE_DOCKER_SOCKET_PATH',
  ),
);
const transport = new StdioClientTransport({
  command: process.execPath,
  args: [CLI, 'mcp'],
  cwd: tmp,
  env: { ...env, GENAICODE_DOCKER_LOG_DIR: join(tmp, 'server-logs') },
  stderr: 'ignore',
});
const client = new Client({ name: 'bench', version: '1.0.0' });
console.log(`# MCP overhead: a \`true\` command through MCP vs the library (load ${loadAvg()})`);
let pass = true;
try {
  await client.connect(transport);
  const started = await client.callTool({ name: 'startContainer', arguments: { image: MINIMAL_IMAGE } });
  if (started.isError) throw new Error(`startContainer: ${JSON.stringify(started.structuredContent)}`);
  const mcpContainer = started.structuredContent.name;
  const sb = await manager.start({ image: MINIMAL_IMAGE });
  const threshold = config.plugin.summaryThresholdBytes;

  const { times } = await interleave(
    {
      mcp: async () => {
        const r = await client.callTool({ name: 'runCommand', arguments: { containerId: mcpContainer, cmd: 'true' } });
        if (r.isError || r.structuredContent.exitCode !== 0) throw new Error(`runCommand: ${JSON.stringify(r.structuredContent)}`);
      },
      library: async () => {
        const result = await sb.exec('true');
        const answer = answerForModel(await buildCommandAnswer(result, { thresholdBytes: threshold }));
        if (answer.exitCode !== 0) throw new Error(`exec: exit ${answer.exitCode}`);
      },
    },
    { rounds: ROUNDS, warmup: 5 },
  );
  const ref = await interleave(
    {
      'mcp, no engine': async () => {
        const r = await client.callTool({ name: 'runCommand', arguments: { containerId: 'no-such-container', cmd: 'true' } });
        if (!r.isError) throw new Error('expected CONTAINER_NOT_FOUND');
      },
    },
    { rounds: ROUNDS, warmup: 5 },
  );
  console.log(`\n| \`true\` (${ROUNDS} rounds, interleaved) | median | p90 |\n|---|---|---|`);
  for (const [name, t] of Object.entries({ ...times, ...ref.times })) console.log(`| ${name} | ${fmtMs(median(t))} | ${fmtMs(p90(t))} |`);
  const diffs = times.mcp.map((t, i) => t - times.library[i]);
  const overhead = median(diffs);
  pass = overhead <= 5;
  console.log(
    `\n${pass ? 'PASS' : 'FAIL'} MCP overhead on a \`true\` command: ${fmtMs(overhead)} (median of paired differences; medians ${fmtMs(median(times.mcp))} vs ${fmtMs(median(times.library))}) (limit <= 5 ms)`,
  );
  console.log(
    `(reference) a call answered without the engine: ${fmtMs(median(ref.times['mcp, no engine']))} (the protocol's round trip and the server's dispatch)`,
  );
} finally {
  await client.close().catch(() => undefined);
  await manager.stopAll();
  rmQuiet(tmp);
}
process.exitCode = pass ? 0 : 1;
