/**
 * `genaicode-docker mcp` through the SDK's own client over stdio, against the built CLI and
 * a real engine: the tools listed with the plugin's schemas, a container started, used and
 * stopped, code run, failures as isError results with the closed codes, the client's model
 * used through sampling, and no container left when the client goes.
 */
import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { actionFunctionDef } from '../../../src/actions/action-spec.js';
import { RUN_COMMAND } from '../../../src/actions/container-specs.js';
import { READ_CONTAINER_FILE } from '../../../src/actions/file-specs.js';
import { loadConfig } from '../../../src/config/load-config.js';
import { SANDBOX_ERROR_CODES } from '../../../src/errors.js';
import { MAX_ANSWER_CHARS } from '../../../src/mcp/tool-result.js';
import { CLI, ROOT, requireBuiltPackage } from '../../support/built-package.js';
import { listManaged, MINIMAL_IMAGE, requireEngine, waitFor } from '../../support/engine.js';
import { answerOf, connectMcp, serverEnv, type McpSession } from '../../support/mcp-client.js';
import { removeTempDirs, tempDir } from '../../support/temp-dirs.js';

const sessions: McpSession[] = [];
beforeAll(async () => {
  await requireEngine();
  requireBuiltPackage(CLI);
});
afterAll(async () => {
  await Promise.all(sessions.map((s) => s.client.close().catch(() => undefined)));
  removeTempDirs();
});

function dockerTop(name: string): string {
  return execFileSync('docker', ['top', name], { encoding: 'utf8' });
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

const ownedBy = (pid: number) => ({ 'genaicode-docker.owner': `${hostname()}:${pid}` });

async function open(options: Parameters<typeof connectMcp>[0] = {}): Promise<McpSession> {
  const s = await connectMcp(options);
  sessions.push(s);
  return s;
}

test('tools/list: every tool with the schema the GenAIcode action has, and annotations', async () => {
  const s = await open();
  const { tools } = await s.client.listTools();
  expect(tools.map((t) => t.name)).toEqual([
    'startContainer',
    'runCommand',
    'stopContainer',
    'codeExecute',
    'readContainerFile',
    'writeContainerFile',
    'listContainerDirectory',
    'editContainerFile',
    'readLog',
    'readProcessOutput',
    'writeProcessInput',
    'stopProcess',
    'listProcesses',
    'waitForPort',
    'waitForOutput',
  ]);
  // One place per fact: the same JSON Schema the plugin's function definition has, notes included.
  // The server's configuration: its own project folder and config home, no GENAICODE_DOCKER_* set.
  const config = loadConfig({ cwd: tempDir('gcd-mcp-project-'), env: { XDG_CONFIG_HOME: tempDir('gcd-mcp-config-') } });
  for (const spec of [RUN_COMMAND, READ_CONTAINER_FILE])
    expect(tools.find((t) => t.name === spec.name)?.inputSchema).toEqual(actionFunctionDef(spec, config).parameters);
  const byName = Object.fromEntries(tools.map((t) => [t.name, t.annotations]));
  expect(byName.readContainerFile).toMatchObject({ readOnlyHint: true, destructiveHint: false });
  expect(byName.readLog).toMatchObject({ readOnlyHint: true });
  expect(byName.stopContainer).toMatchObject({ readOnlyHint: false, destructiveHint: true });
  expect(byName.runCommand).toMatchObject({ readOnlyHint: false, openWorldHint: false });
  expect(byName.startContainer).toMatchObject({ openWorldHint: true });
  await s.client.close();
}, 60_000);

test('a background process through the tools: started, waited on, fed, read, stopped; the container stop lists what ran', async () => {
  const s = await open();
  const id = answerOf(await s.call('startContainer', { image: MINIMAL_IMAGE })).name as string;
  const started = answerOf(
    await s.call('runCommand', { containerId: id, cmd: 'echo ready; while read -r l; do echo "got:$l"; done', background: true }),
  );
  expect(started).toMatchObject({ processId: 'p1', status: 'running', logPath: expect.stringContaining('bg-p1') });
  expect(answerOf(await s.call('waitForOutput', { containerId: id, processId: 'p1', pattern: 'ready', timeoutMs: 10_000 }))).toMatchObject({
    found: true,
  });
  expect(answerOf(await s.call('writeProcessInput', { containerId: id, processId: 'p1', text: 'x\n' }))).toMatchObject({ bytes: 2 });
  expect(answerOf(await s.call('waitForOutput', { containerId: id, processId: 'p1', pattern: 'got:x', timeoutMs: 10_000 }))).toMatchObject({
    found: true,
    line: 2,
  });
  expect(answerOf(await s.call('readProcessOutput', { containerId: id, processId: 'p1' }))).toMatchObject({
    fromLine: 1,
    toLine: 2,
    output: 'ready\ngot:x\n',
  });
  expect(answerOf(await s.call('listProcesses', { containerId: id }))).toMatchObject({
    processes: [{ processId: 'p1', status: 'running' }],
  });
  const second = answerOf(await s.call('runCommand', { containerId: id, cmd: 'sleep 300', yieldMs: 200 }));
  expect(second).toMatchObject({ processId: 'p2', status: 'running' });
  expect(answerOf(await s.call('stopProcess', { containerId: id, processId: 'p1' }))).toMatchObject({ status: 'stopped', verified: true });
  expect(answerOf(await s.call('stopContainer', { containerId: id }))).toMatchObject({
    processesStopped: [{ processId: 'p2', command: 'sleep 300' }],
  });
  await s.client.close();
}, 120_000);

test('start, run, the file tools, readLog, a long output, code, stop: the answers as text and structuredContent', async () => {
  const s = await open();
  const start = answerOf(await s.call('startContainer', { image: MINIMAL_IMAGE }));
  expect(start).toMatchObject({ status: 'running', image: MINIMAL_IMAGE, lifetime: expect.stringContaining('MCP server ends') });
  const id = start.name as string;
  expect((await listManaged(ownedBy(s.serverPid))).map((c) => c.name)).toEqual([id]);

  const run = await s.call('runCommand', { containerId: id, cmd: 'echo hello; echo oops >&2; exit 3' });
  expect(run.isError).toBeUndefined();
  const ran = answerOf(run);
  expect(ran).toMatchObject({ exitCode: 3, output: expect.stringContaining('hello') });
  expect(ran.logPath).toEqual(expect.stringContaining(join('gcd-mcp-state-')));

  const log = answerOf(await s.call('readLog', { logPath: ran.logPath, startLine: 1, endLine: 5 }));
  // stdout and stderr in the order they came: both lines are there.
  expect(log.text).toMatch(/^[12]\| hello$/m);
  expect(log.text).toMatch(/^[12]\| oops$/m);

  expect(answerOf(await s.call('writeContainerFile', { containerId: id, path: 'notes/a.txt', content: 'one\ntwo\n' }))).toMatchObject({
    created: true,
    bytesWritten: 8,
  });
  expect(
    answerOf(await s.call('editContainerFile', { containerId: id, path: 'notes/a.txt', oldText: 'two', newText: 'deux' })),
  ).toMatchObject({ bytesWritten: 9 });
  expect(answerOf(await s.call('readContainerFile', { containerId: id, path: 'notes/a.txt' }))).toMatchObject({
    text: '1| one\n2| deux',
    totalLines: 2,
  });
  const listed = answerOf(await s.call('listContainerDirectory', { containerId: id, depth: 2 }));
  expect(JSON.stringify(listed.entries)).toContain('notes/a.txt');

  // A long output: summary and verbatim key lines (no sampling here: the extractive summary), within the client's limit.
  const long = await s.call('runCommand', { containerId: id, cmd: 'seq 1 200000; echo "error: the thing failed" >&2; exit 1' });
  const longAnswer = answerOf(long);
  expect(longAnswer).toMatchObject({ exitCode: 1, summary: expect.any(String) });
  expect(longAnswer.keyLines).toEqual(expect.arrayContaining([expect.stringContaining('error: the thing failed')]));
  expect((long.content[0] as { text: string }).text.length).toBeLessThanOrEqual(MAX_ANSWER_CHARS);
  // stdout and stderr are two pipes: the engine may read the stderr line before the last of
  // stdout (up to a pipe's worth before it), so the numbers may come one line later.
  const tail = answerOf(await s.call('readLog', { logPath: longAnswer.logPath, startLine: 199_990, endLine: 200_001 }));
  expect(tail.text).toMatch(/^(199999|200000)\| 199999$/m);
  expect(tail.text).toMatch(/^(200000|200001)\| 200000$/m);
  expect(tail.text).toMatch(/^200001\| /m);

  const code = answerOf(await s.call('codeExecute', { language: 'python', code: 'print(6 * 7)' }));
  expect(code).toMatchObject({ exitCode: 0, stdout: '42\n' });

  expect(answerOf(await s.call('stopContainer', { containerId: id }))).toMatchObject({ status: 'removed', name: id });
  await s.client.close();
  await waitFor(
    'the server to remove its code container',
    async () => ((await listManaged(ownedBy(s.serverPid))).length ? undefined : true),
    30_000,
  );
}, 180_000);

test('failures are isError results with a code from the closed set', async () => {
  const s = await open();
  const cases: Array<[string, Record<string, unknown>, string]> = [
    ['runCommand', { containerId: 'nope', cmd: 'true' }, 'CONTAINER_NOT_FOUND'],
    ['runCommand', { containerId: 'nope' }, 'INVALID_ARGUMENT'],
    ['runCommand', { containerId: 'nope', cmd: 'true', timeoutMs: -5 }, 'INVALID_ARGUMENT'],
    ['startContainer', { image: 'docker.io/library/nginx:latest' }, 'IMAGE_NOT_ALLOWED'],
    ['startContainer', { image: MINIMAL_IMAGE, language: 'python' }, 'INVALID_ARGUMENT'],
    ['startContainer', { image: MINIMAL_IMAGE, project: 'rw' }, 'POLICY_VIOLATION'],
    ['readLog', { logPath: '/etc/passwd' }, 'INVALID_ARGUMENT'],
    ['readLog', { logPath: 'relative/log' }, 'INVALID_ARGUMENT'],
    ['readLog', { logPath: '/nonexistent/../etc/passwd' }, 'INVALID_ARGUMENT'],
    ['noSuchTool', {}, 'INVALID_ARGUMENT'],
    ['runContainerTask', { taskDescription: 'nothing to run it with' }, 'INVALID_ARGUMENT'],
  ];
  for (const [tool, args, code] of cases) {
    const r = await s.call(tool, args);
    expect([tool, r.isError]).toEqual([tool, true]);
    const answer = answerOf(r);
    expect([tool, answer.code]).toEqual([tool, code]);
    expect(SANDBOX_ERROR_CODES).toContain(answer.code);
    expect(answer.error).toEqual(expect.any(String));
  }
  expect(await listManaged(ownedBy(s.serverPid))).toEqual([]);
  await s.client.close();
}, 90_000);

test("with the client's sampling: summaries from the client's model, and runContainerTask on it", async () => {
  const prompts: string[] = [];
  let step = 0;
  const s = await open({
    sample: (prompt) => {
      prompts.push(prompt);
      if (prompt.includes('- nextCommand:'))
        return ++step === 1
          ? 'Sure:\n```json\n{"name": "nextCommand", "args": {"command": "echo task-ran > /tmp/out && cat /tmp/out"}}\n```'
          : '{"name": "taskComplete", "args": {"summary": "ran it"}}';
      if (prompt.includes('- taskSummary:'))
        return '{"name": "taskSummary", "args": {"summary": "The task wrote task-ran and read it back."}}';
      return 'CLIENT-MODEL-SUMMARY: the output counts to 200000 and ends with an error.';
    },
  });
  const { tools } = await s.client.listTools();
  expect(tools.map((t) => t.name)).toContain('runContainerTask');

  const id = answerOf(await s.call('startContainer', { image: MINIMAL_IMAGE })).name as string;
  const long = answerOf(await s.call('runCommand', { containerId: id, cmd: 'seq 1 200000; echo "error: the thing failed" >&2; exit 1' }));
  expect(long.summary).toContain('CLIENT-MODEL-SUMMARY');
  expect(prompts.some((p) => p.includes('Exit code: 1'))).toBe(true);
  await s.call('stopContainer', { containerId: id });

  const task = answerOf(
    await s.call('runContainerTask', { taskDescription: 'Write task-ran to /tmp/out and show it.', image: MINIMAL_IMAGE }),
  );
  expect(task).toMatchObject({
    success: true,
    commandsRun: 1,
    summary: expect.stringContaining('The task wrote task-ran and read it back.'),
  });
  expect(await listManaged(ownedBy(s.serverPid))).toEqual([]);
  await s.client.close();
}, 180_000);

test('the client killed mid-command: the server removes its container and exits', async () => {
  const child = spawn(process.execPath, [join(ROOT, 'test', 'support', 'mcp-client-child.mjs'), CLI], {
    cwd: tempDir('gcd-mcp-project-'),
    env: serverEnv(),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  const { serverPid, name } = await waitFor(
    'the client to start a container',
    async () => {
      const line = out.split('\n').find((l) => l.startsWith('{'));
      return line ? (JSON.parse(line) as { serverPid: number; name: string }) : undefined;
    },
    60_000,
  );
  expect((await listManaged(ownedBy(serverPid))).map((c) => c.name)).toEqual([name]);
  // The command is running (its sleep is in the container) when the client is killed.
  await waitFor('the command to run', async () => (dockerTop(name).includes('sleep 600') ? true : undefined), 30_000);
  child.kill('SIGKILL');
  await waitFor('the container to be removed', async () => ((await listManaged(ownedBy(serverPid))).length ? undefined : true), 30_000);
  await waitFor('the server to exit', async () => (alive(serverPid) ? undefined : true), 15_000);
}, 120_000);

test('the client closing the connection with a container idle: removed too', async () => {
  const s = await open();
  const id = answerOf(await s.call('startContainer', { image: MINIMAL_IMAGE })).name as string;
  expect((await listManaged(ownedBy(s.serverPid))).map((c) => c.name)).toEqual([id]);
  await s.client.close();
  await waitFor('the container to be removed', async () => ((await listManaged(ownedBy(s.serverPid))).length ? undefined : true), 30_000);
}, 90_000);

test('settings that allow more than a client takes: the result is cut to fit, with a marker; annotations follow the settings', async () => {
  const configHome = tempDir('gcd-mcp-config-');
  mkdirSync(join(configHome, 'genaicode-docker'));
  writeFileSync(
    join(configHome, 'genaicode-docker', 'config.json'),
    JSON.stringify({
      files: { maxReadBytes: '1m', maxReadLines: 1_000_000 },
      codeExecute: { maxOutputChars: 500_000 },
      project: { mount: 'rw' },
    }),
  );
  const s = await open({ env: serverEnv({ XDG_CONFIG_HOME: configHome }) });
  const { tools } = await s.client.listTools();
  expect(tools.find((t) => t.name === 'runCommand')?.annotations).toMatchObject({ destructiveHint: true });
  expect(tools.find((t) => t.name === 'writeContainerFile')?.annotations).toMatchObject({ destructiveHint: true });

  // codeExecute's output is capped at capture already (exec.maxBytes), whatever maxOutputChars says.
  const code = await s.call('codeExecute', { language: 'python', code: 'print("x" * 300_000)' });
  expect((code.content[0] as { text: string }).text.length).toBeLessThanOrEqual(MAX_ANSWER_CHARS);
  expect(answerOf(code)).toMatchObject({ exitCode: 0, logPath: expect.any(String) });

  const id = answerOf(await s.call('startContainer', { image: MINIMAL_IMAGE })).name as string;
  await s.call('runCommand', { containerId: id, cmd: 'seq 1 100000 > big.txt' });
  const read = await s.call('readContainerFile', { containerId: id, path: 'big.txt', endLine: 100000 });
  expect((read.content[0] as { text: string }).text.length).toBeLessThanOrEqual(MAX_ANSWER_CHARS);
  const readAnswer = answerOf(read);
  expect(readAnswer).toMatchObject({ startLine: 1, endLine: 100000, totalLines: 100000 });
  expect(readAnswer.text).toMatch(/^ +1\| 1\n +2\| 2\n/);
  expect(readAnswer.text).toMatch(/\[cut: \d+ more characters, over the client's limit for one result\]$/);
  await s.call('stopContainer', { containerId: id });
  await s.client.close();
}, 120_000);

test('the server stopped by a signal mid-command removes its container and exits', async () => {
  const s = await open();
  const id = answerOf(await s.call('startContainer', { image: MINIMAL_IMAGE })).name as string;
  const running = s.call('runCommand', { containerId: id, cmd: 'sleep 600' }).catch((e: unknown) => e);
  await waitFor('the command to run', async () => (dockerTop(id).includes('sleep 600') ? true : undefined), 30_000);
  process.kill(s.serverPid, 'SIGTERM');
  await waitFor('the container to be removed', async () => ((await listManaged(ownedBy(s.serverPid))).length ? undefined : true), 30_000);
  await waitFor('the server to exit', async () => (alive(s.serverPid) ? undefined : true), 15_000);
  await running;
}, 90_000);
