/**
 * A client nobody here wrote: the MCP Inspector's command-line mode
 * (`@modelcontextprotocol/inspector --cli`, a devDependency) lists the tools of
 * `genaicode-docker mcp` and calls them, against the built CLI and a real engine.
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { CLI, ROOT, requireBuiltPackage } from '../../support/built-package.js';
import { requireEngine } from '../../support/engine.js';
import { serverEnv } from '../../support/mcp-client.js';
import { removeTempDirs, tempDir } from '../../support/temp-dirs.js';

const INSPECTOR = join(ROOT, 'node_modules', '.bin', 'mcp-inspector');

beforeAll(async () => {
  await requireEngine();
  requireBuiltPackage(CLI);
});
afterAll(() => removeTempDirs());

function inspector(args: string[]): { status: number | null; json: unknown; stderr: string } {
  // The inspector starts the server with a few variables of its own environment only: the
  // state and config folders are passed with -e, so the logs go to a temporary folder.
  const state = tempDir('gcd-mcp-inspector-state-');
  const config = tempDir('gcd-mcp-inspector-config-');
  const r = spawnSync(
    INSPECTOR,
    ['--cli', '-e', `XDG_STATE_HOME=${state}`, '-e', `XDG_CONFIG_HOME=${config}`, process.execPath, CLI, 'mcp', ...args],
    { cwd: tempDir('gcd-mcp-inspector-'), env: serverEnv(), encoding: 'utf8', timeout: 90_000 },
  );
  expect(r.stderr).toContain(`logs in ${state}`);
  if (r.error) throw r.error;
  let json: unknown;
  try {
    json = JSON.parse(r.stdout);
  } catch {
    throw new Error(`the inspector printed no JSON (exit ${r.status}): ${r.stdout}${r.stderr}`);
  }
  return { status: r.status, json, stderr: r.stderr };
}

test('the inspector lists the tools with their schemas and annotations', () => {
  const r = inspector(['--method', 'tools/list']);
  expect(r.status).toBe(0);
  const tools = (r.json as { tools: Array<{ name: string; inputSchema: { properties: Record<string, unknown> }; annotations: object }> })
    .tools;
  expect(tools.map((t) => t.name)).toEqual(expect.arrayContaining(['startContainer', 'runCommand', 'codeExecute', 'readLog']));
  expect(Object.keys(tools.find((t) => t.name === 'runCommand')!.inputSchema.properties)).toEqual([
    'containerId',
    'cmd',
    'timeoutMs',
    'background',
    'yieldMs',
  ]);
  expect(tools.find((t) => t.name === 'readContainerFile')!.annotations).toMatchObject({ readOnlyHint: true });
}, 120_000);

test('the inspector calls codeExecute, and gets a closed error code as an isError result', () => {
  const ok = inspector([
    '--method',
    'tools/call',
    '--tool-name',
    'codeExecute',
    '--tool-arg',
    'language=python',
    '--tool-arg',
    'code=print(6*7)',
  ]);
  expect(ok.status).toBe(0);
  expect(ok.json).toMatchObject({ structuredContent: { exitCode: 0, stdout: '42\n', container: 'new' } });

  const bad = inspector([
    '--method',
    'tools/call',
    '--tool-name',
    'runCommand',
    '--tool-arg',
    'containerId=nope',
    '--tool-arg',
    'cmd=echo hi',
  ]);
  expect(bad.json).toMatchObject({ isError: true, structuredContent: { code: 'CONTAINER_NOT_FOUND' } });
}, 180_000);
