#!/usr/bin/env node
// The MCP server's overhead on a `true` command, side by side in one run:
//   - through MCP: the SDK's client calls runCommand on `genaicode-docker mcp` (the built
//     CLI, a child process over stdio), timed from the call to the answer it reads;
//   - through the library: Sandbox.exec and the same answer (buildCommandAnswer,
//     answerForModel) in this process, on a container of its own, and on a second one (the
//     noise between two containers of the same run);
// interleaved. Target: what MCP adds to the same call, the client's time minus the time the
// server spent in the tool (Sandbox.exec and the answer, from the server's debug log), median
// <= 5 ms. Two containers differ by more than that on a loaded machine, so the side-by-side
// medians are printed for reference, not judged. A call answered without the engine
// (CONTAINER_NOT_FOUND) shows the protocol's round trip alone.
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
// The server gets the same settings: the engine's address only, its logs under tmp; its
// debug log says how long each call spent in the tool.
const env = Object.fromEntries(
  Object.entries(process.env).filter(
    ([k]) => !k.startsWith('GENAICODE_DOCKER_') || k === 'GENAICODE_DOCKER_HOST' || k === 'GENAICODE_DOCKER_SOCKET_PATH',
  ),
);
const transport = new StdioClientTransport({
  command: process.execPath,
  args: [CLI, 'mcp'],
  cwd: tmp,
  env: { ...env, GENAICODE_DOCKER_LOG_DIR: join(tmp, 'server-logs'), NODE_DEBUG: 'genaicode-docker' },
  stderr: 'pipe',
});
let serverLog = '';
transport.stderr?.on('data', (d) => (serverLog += d.toString()));
/** The tool times the server logged for runCommand, in call order. */
const toolTimes = () => [...serverLog.matchAll(/tool runCommand: ([\d.]+) ms in the tool/g)].map((m) => Number(m[1]));

const client = new Client({ name: 'bench', version: '1.0.0' });
console.log(`# MCP overhead: a \`true\` command through MCP vs the library (load ${loadAvg()})`);
let pass = true;
try {
  await client.connect(transport);
  const started = await client.callTool({ name: 'startContainer', arguments: { image: MINIMAL_IMAGE } });
  if (started.isError) throw new Error(`startContainer: ${JSON.stringify(started.structuredContent)}`);
  const mcpContainer = started.structuredContent.name;
  const sb = await manager.start({ image: MINIMAL_IMAGE });
  const sb2 = await manager.start({ image: MINIMAL_IMAGE });
  const threshold = config.plugin.summaryThresholdBytes;
  const library = async (sandbox) => {
    const result = await sandbox.exec('true');
    const answer = answerForModel(await buildCommandAnswer(result, { thresholdBytes: threshold }));
    if (answer.exitCode !== 0) throw new Error(`exec: exit ${answer.exitCode}`);
  };

  const before = toolTimes().length;
  const { times } = await interleave(
    {
      mcp: async () => {
        const r = await client.callTool({ name: 'runCommand', arguments: { containerId: mcpContainer, cmd: 'true' } });
        if (r.isError || r.structuredContent.exitCode !== 0) throw new Error(`runCommand: ${JSON.stringify(r.structuredContent)}`);
      },
      library: () => library(sb),
      'library, a second container': () => library(sb2),
    },
    { rounds: ROUNDS, warmup: 5 },
  );
  const inTool = toolTimes().slice(before + 5); // the warm-up calls are not counted
  if (inTool.length !== times.mcp.length) throw new Error(`the server logged ${inTool.length} calls, not ${times.mcp.length}`);
  const added = times.mcp.map((t, i) => t - inTool[i]);
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
  for (const [name, t] of Object.entries({ ...times, 'mcp: in the server’s tool': inTool, ...ref.times }))
    console.log(`| ${name} | ${fmtMs(median(t))} | ${fmtMs(p90(t))} |`);
  const overhead = median(added);
  pass = overhead <= 5;
  console.log(
    `\n${pass ? 'PASS' : 'FAIL'} MCP overhead on a \`true\` command: ${fmtMs(overhead)} (median of the client's time minus the server's tool time; p90 ${fmtMs(p90(added))}) (limit <= 5 ms)`,
  );
  const diff = (a, b) => median(a.map((t, i) => t - b[i]));
  console.log(
    `(reference) side by side: MCP - library ${fmtMs(diff(times.mcp, times.library))}, ` +
      `library on a second container - library ${fmtMs(diff(times['library, a second container'], times.library))} (the noise between containers), ` +
      `a call answered without the engine ${fmtMs(median(ref.times['mcp, no engine']))} (load ${loadAvg()})`,
  );
} finally {
  await client.close().catch(() => undefined);
  await manager.stopAll();
  rmQuiet(tmp);
}
process.exitCode = pass ? 0 : 1;
