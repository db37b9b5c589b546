/**
 * codeExecute keeps one sandbox per conversation, through the plugin as GenAIcode drives
 * it: a second conversation never runs in the first one's container (whatever a snippet
 * left there), and a conversation's end, or the user's interrupt, removes its container.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createDockerPlugin } from '../../../src/prompt/create-plugin.js';
import type { PromptItem } from '../../../src/prompt/host/genaicode-types.js';
import { FakeEngine } from '../../support/fake-engine.js';
import { FakeHost, handlerProps, ScriptedModel } from '../../support/fake-host.js';
import { removeTempDirs, tempDir } from '../helpers.js';

const savedEnv = { ...process.env };
beforeEach(() => {
  for (const k of Object.keys(process.env)) if (k.startsWith('GENAICODE_DOCKER_')) delete process.env[k];
  process.env.XDG_CONFIG_HOME = tempDir('gcd-xdg-');
});
afterEach(() => {
  process.env = { ...savedEnv };
  removeTempDirs();
});

function setup(signal?: AbortSignal) {
  const project = tempDir('gcd-project-');
  writeFileSync(join(project, '.genaicoderc'), '{"rootDir":"."}');
  mkdirSync(join(project, 'src'));
  const engine = new FakeEngine({ images: ['genaicode-docker/sandbox-python:latest'] });
  const host = new FakeHost(signal ? { signal } : {});
  const plugin = createDockerPlugin({
    engine,
    host,
    cwd: project,
    config: { logs: { dir: tempDir('gcd-logs-') }, plugin: { confirmStart: false } },
  });
  const run = async (prompt: PromptItem[], code = 'print(1)') => {
    const handler = plugin.actionHandlers!.codeExecute!.handler;
    await handler(
      handlerProps('codeExecute', new ScriptedModel([[{ id: 'c', name: 'codeExecute', args: { language: 'python', code } }]]), { prompt }),
    );
  };
  /** The container each exec ran in, in order. */
  const execContainers = () => engine.callsOf('exec').map(([id]) => id);
  const removed = () => engine.callsOf('removeContainer').map(([id]) => id);
  return { engine, host, run, execContainers, removed };
}

test('two conversations: two containers, each reused by its own conversation only', async () => {
  const { run, execContainers, engine } = setup();
  const first: PromptItem[] = [];
  const second: PromptItem[] = [];
  await run(first, 'open("json.py", "w").write("x")');
  await run(second, 'import json');
  await run(first);
  await run(second);
  expect(engine.callsOf('createContainer')).toHaveLength(2);
  const [a1, b1, a2, b2] = execContainers();
  expect(a1).not.toBe(b1);
  expect(a2).toBe(a1);
  expect(b2).toBe(b1);
});

test("a conversation's end removes its code container, not another conversation's; its next call gets a new one", async () => {
  const { run, execContainers, removed, host, engine } = setup();
  const first: PromptItem[] = [];
  const second: PromptItem[] = [];
  await run(first);
  await run(second);
  const [a, b] = execContainers();
  await host.endConversation(first);
  expect(removed()).toEqual([a]);
  await run(second);
  expect(execContainers().at(-1)).toBe(b);
  await run(first);
  expect(engine.callsOf('createContainer')).toHaveLength(3);
  expect(execContainers().at(-1)).not.toBe(a);
});

test("the user's interrupt ends the conversation: its code container is removed", async () => {
  const controller = new AbortController();
  const { run, execContainers, removed, host } = setup(controller.signal);
  await run([]);
  host.signal = undefined;
  controller.abort();
  await new Promise((r) => setTimeout(r, 50));
  expect(removed()).toEqual([execContainers()[0]]);
});
