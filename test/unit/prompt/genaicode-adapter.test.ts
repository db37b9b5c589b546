/**
 * The GenAIcode adapter without GenAIcode or an engine: the plugin's action handlers are
 * driven with hand-built ActionHandlerProps whose model is scripted, against a FakeEngine
 * and a fake host. What the model is asked, what it and the user get back, and what
 * reaches the engine.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ConfigInput } from '../../../src/config/config-schema.js';
import { SandboxError } from '../../../src/errors.js';
import { createDockerPlugin } from '../../../src/prompt/create-plugin.js';
import type { ActionHandlerProps, ActionResult, Plugin, PromptItem } from '../../../src/prompt/host/genaicode-types.js';
import { dockerSystemPrompt } from '../../../src/prompt/system-prompt.js';
import { commandOf, FakeEngine, out, type FakeEngineOptions } from '../../support/fake-engine.js';
import {
  CONVERSATION,
  FakeHost,
  handlerProps,
  ScriptedModel,
  TIERS,
  type FakeHostOptions,
  type ScriptedAnswer,
} from '../../support/fake-host.js';
import { removeTempDirs, tempDir, testConfig } from '../helpers.js';

const MiB = 1024 ** 2;

// The plugin reads the user's own config file and GENAICODE_DOCKER_* from the process:
// each test gets an empty config home and none of those variables.
const savedEnv = { ...process.env };
beforeEach(() => {
  for (const k of Object.keys(process.env)) if (k.startsWith('GENAICODE_DOCKER_')) delete process.env[k];
  process.env.XDG_CONFIG_HOME = tempDir('gcd-xdg-');
});
afterEach(() => {
  process.env = { ...savedEnv };
  removeTempDirs();
});

interface Setup {
  config?: ConfigInput;
  engine?: FakeEngineOptions;
  host?: FakeHostOptions;
}

/** A project (with .genaicoderc, the plugin run from a folder below it), its logs elsewhere, a FakeEngine, a fake host. */
function setup(o: Setup = {}) {
  const project = tempDir('gcd-project-');
  writeFileSync(join(project, '.genaicoderc'), JSON.stringify({ rootDir: '.' }));
  const cwd = join(project, 'src');
  mkdirSync(cwd);
  const logs = tempDir('gcd-logs-');
  const engine = new FakeEngine({ images: ['alpine:3.20'], ...o.engine });
  const host = new FakeHost(o.host);
  // The fake engine runs one exec per command: the kept shell is off (tested against a real engine).
  const plugin = createDockerPlugin({
    engine,
    host,
    cwd,
    config: { logs: { dir: logs }, ...o.config, exec: { keptShell: false, ...o.config?.exec } },
  });
  /** Runs one action with a model scripted by `answers` (a list, or a ScriptedModel). */
  const act = async (action: string, answers: ScriptedAnswer[] | ScriptedModel, over: Partial<ActionHandlerProps> = {}) => {
    const model = answers instanceof ScriptedModel ? answers : new ScriptedModel(answers);
    const props = handlerProps(action, model, over);
    const result = await handlerOf(plugin, action)(props);
    return { result, model, props, ...reply(result) };
  };
  /** Starts a container without a question, by a scripted startContainer. */
  const start = async (name: string) => {
    const r = await act('startContainer', [[{ id: `start-${name}`, name: 'startContainer', args: { image: 'alpine:3.20', name } }]]);
    expect(r.answer).toMatchObject({ name, status: 'running' });
    return r;
  };
  return { project, logs, engine, host, plugin, act, start };
}

function handlerOf(plugin: Plugin, action: string) {
  const entry = plugin.actionHandlers?.[action];
  if (!entry) throw new Error(`the plugin has no action ${action}`);
  return entry.handler;
}

/** The last step of a result: the model's answer (parsed), the function response, the user's line. */
function reply(result: ActionResult) {
  const item = result.items.at(-1);
  const response = item?.user.functionResponses?.[0];
  if (!item || !response?.content) throw new Error(`no function response in ${JSON.stringify(result)}`);
  return { item, response, answer: JSON.parse(response.content) as Record<string, unknown>, userText: item.user.text ?? '' };
}

/** Engine calls other than the background reachability check. */
function actionCalls(engine: FakeEngine): string[] {
  return engine.methods().filter((m) => m !== 'info');
}

const tick = (ms = 20) => new Promise((r) => setTimeout(r, ms));
// eslint-disable-next-line no-control-regex -- raw control characters are what must not reach the user
const RAW_CONTROL = /[\u0000-\u001f\u007f-\u009f]/;

describe('the plugin', () => {
  test('has the fifteen actions, each described with the arguments its schema takes', () => {
    const { plugin } = setup();
    expect(plugin.name).toBe('genaicode-docker');
    const handlers = plugin.actionHandlers ?? {};
    expect(Object.keys(handlers).sort()).toEqual([
      'codeExecute',
      'editContainerFile',
      'listContainerDirectory',
      'listProcesses',
      'readContainerFile',
      'readProcessOutput',
      'runCommand',
      'runContainerTask',
      'startContainer',
      'stopContainer',
      'stopProcess',
      'waitForOutput',
      'waitForPort',
      'writeContainerFile',
      'writeProcessInput',
    ]);
    expect(handlers.readContainerFile?.description).toContain('(args: containerId, path, startLine?, endLine?)');
    expect(handlers.writeContainerFile?.description).toContain('(args: containerId, path, content)');
    expect(handlers.listContainerDirectory?.description).toContain('(args: containerId, path?, depth?)');
    expect(handlers.editContainerFile?.description).toContain('(args: containerId, path, oldText, newText)');
    expect(handlers.codeExecute?.description).toContain('(args: language, code, timeoutSeconds?)');
    expect(handlers.startContainer?.description).toContain('(args: image?, language?, name?, project?, keepAfterConversation?)');
    expect(handlers.runCommand?.description).toContain('(args: containerId, cmd, timeoutMs?, background?, yieldMs?)');
    expect(handlers.readProcessOutput?.description).toContain('(args: containerId, processId, sinceLine?)');
    expect(handlers.waitForPort?.description).toContain('(args: containerId, port, timeoutMs?)');
    expect(handlers.stopContainer?.description).toContain('(args: containerId)');
    expect(handlers.runContainerTask?.description).toContain(
      '(args: image?, language?, taskDescription, workingDir?, maxCommands?, project?)',
    );
  });

  test('creating it calls no engine method; before the first action only the background reachability check (info) runs', async () => {
    const { engine, host } = setup();
    expect(engine.calls).toEqual([]);
    await tick();
    expect(engine.methods()).toEqual(['info']);
    expect(host.confirmations).toEqual([]);
    expect(host.messages).toEqual([]);
  });

  test('an unreachable engine is reported once as a system message, not thrown', async () => {
    const { engine, host } = setup();
    engine.fail('info', new SandboxError('ENGINE_UNAVAILABLE', 'No container engine answers at fake://.'));
    await tick();
    expect(host.messageTexts()).toEqual(['genaicode-docker: No container engine answers at fake://.']);
  });
});

describe('asking the model for the arguments', () => {
  test('one function definition named as the action, from its schema; no required name; the cheap tier; the host options', async () => {
    const { act } = setup();
    const { model, props } = await act('runCommand', [[{ id: 'run-1', name: 'runCommand', args: { containerId: 'box', cmd: 'ls' } }]]);

    expect(model.calls).toHaveLength(1);
    const [call] = model.calls;
    expect(call!.functionDefs).toHaveLength(1);
    const [def] = call!.functionDefs;
    expect(def!.name).toBe('runCommand');
    expect(def!.parameters.type).toBe('object');
    expect(Object.keys(def!.parameters.properties)).toEqual(['containerId', 'cmd', 'timeoutMs', 'background', 'yieldMs']);
    expect(def!.parameters.required).toEqual(['containerId', 'cmd']);
    // A configuration-dependent note on the field: the default timeout and the cap.
    expect(def!.parameters.properties.timeoutMs).toMatchObject({ type: 'integer', description: expect.stringContaining('default 300000') });
    expect(call!.requiredFunctionName).toBeNull();
    expect(call!.modelType).toBe(TIERS.cheap);
    expect(call!.options).toBe(props.options);
    // The conversation, the model's own askQuestion message, then the request for the arguments.
    expect(call!.prompt).toEqual([
      ...CONVERSATION,
      { type: 'assistant', text: 'I will use runCommand.' },
      { type: 'user', text: 'Yes. Call runCommand with the arguments for this step.' },
    ]);
  });

  test('startContainer is asked for image or language, name, project and keepAfterConversation, all optional', async () => {
    const { act } = setup({ config: { plugin: { confirmStart: false } } });
    const { model } = await act('startContainer', [[{ name: 'startContainer', args: { image: 'alpine:3.20' } }]]);
    const def = model.calls[0]!.functionDefs[0]!;
    expect(def.name).toBe('startContainer');
    expect(Object.keys(def.parameters.properties)).toEqual(['image', 'language', 'name', 'project', 'keepAfterConversation']);
    expect(def.parameters.properties.language).toMatchObject({
      enum: ['python', 'nodejs', 'java', 'go', 'ruby', 'php', 'dotnet', 'powershell'],
    });
    expect(def.parameters.required).toEqual([]);
  });

  test('invalid arguments get one retry that shows the model the validation error; the valid ones run', async () => {
    const { act, start, engine } = setup({
      config: { plugin: { confirmStart: false } },
      engine: { script: () => ({ frames: [out('hi\n')], exitCode: 0 }) },
    });
    await start('box');
    const { model, answer, response } = await act('runCommand', [
      [{ id: 'run-1', name: 'runCommand', args: { containerId: 'box' } }],
      [{ id: 'run-2', name: 'runCommand', args: { containerId: 'box', cmd: 'echo hi' } }],
    ]);

    expect(model.calls).toHaveLength(2);
    const retry = model.calls[1]!.prompt;
    expect(retry.at(-2)).toEqual({ type: 'assistant', functionCalls: [{ id: 'run-1', name: 'runCommand', args: { containerId: 'box' } }] });
    expect(retry.at(-1)).toMatchObject({
      type: 'user',
      text: 'The arguments were invalid: cmd: Required. Call runCommand again with valid arguments.',
      functionResponses: [{ name: 'runCommand', call_id: 'run-1', isError: true }],
    });
    expect(JSON.parse(retry.at(-1)!.functionResponses![0]!.content!)).toEqual({ error: 'cmd: Required', code: 'INVALID_ARGUMENT' });

    expect(response).toMatchObject({ name: 'runCommand', call_id: 'run-2' });
    expect(response.isError).toBeUndefined();
    expect(answer).toEqual({ exitCode: 0, output: 'hi\n' });
    expect(engine.execsOf('command').map((e) => commandOf(e.spec))).toEqual(['echo hi']);
  });

  test('invalid twice: INVALID_ARGUMENT paired with the last call, and nothing reaches the engine', async () => {
    const { act, engine } = setup();
    const { model, answer, response, result } = await act('runCommand', [
      [{ id: 'run-1', name: 'runCommand', args: { containerId: 'box' } }],
      [{ id: 'run-2', name: 'runCommand', args: { containerId: 'box', cmd: ['rm', '-rf', '/'] } }],
    ]);

    expect(model.calls).toHaveLength(2);
    expect(answer).toEqual({ error: 'Invalid runCommand arguments: cmd: Expected string, received array', code: 'INVALID_ARGUMENT' });
    expect(response).toMatchObject({ name: 'runCommand', call_id: 'run-2', isError: true });
    expect(result.breakLoop).toBe(false);
    expect(engine.callsOf('exec')).toEqual([]);
    expect(actionCalls(engine)).toEqual([]);
  });

  test('an answer that does not call the action is asked again, then refused as INVALID_ARGUMENT', async () => {
    const { act, engine } = setup();
    const { model, answer } = await act('startContainer', [[{ name: 'askQuestion', args: {} }], []]);
    expect(model.calls).toHaveLength(2);
    expect(ScriptedModel.userText(model.calls[1]!)).toContain('That was not a call to startContainer. Call startContainer now.');
    expect(answer).toEqual({
      error: 'Invalid startContainer arguments: expected a call to startContainer, got none',
      code: 'INVALID_ARGUMENT',
    });
    expect(actionCalls(engine)).toEqual([]);
  });
});

describe('hostile arguments are refused before the user is asked', () => {
  test.each([
    ['an image reference that is a path trick', { image: 'genaicode-docker/.' }, 'image: not a valid image reference'],
    ['a name with a terminal escape', { image: 'alpine:3.20', name: 'box\u001b[2J' }, 'name: not a valid container name'],
    ['an image with a control character', { image: 'alpine:3.20\u0007' }, 'image: not a valid image reference'],
  ])('%s', async (_what, args, problem) => {
    const { act, engine, host } = setup();
    const { answer, userText, response } = await act('startContainer', [
      [{ id: 'bad-1', name: 'startContainer', args }],
      [{ id: 'bad-2', name: 'startContainer', args }],
    ]);
    expect(answer.code).toBe('INVALID_ARGUMENT');
    expect(answer.error).toContain(problem);
    expect(response.isError).toBe(true);
    expect(host.confirmations).toEqual([]);
    expect(actionCalls(engine)).toEqual([]);
    expect(userText).not.toMatch(RAW_CONTROL);
  });
});

describe('the project mount and the conversation (seed 004)', () => {
  test('project ro: the question states the mount; the engine gets the project read-only at /workspace', async () => {
    const { act, engine, host, project } = setup();
    const { answer, userText } = await act('startContainer', [[{ name: 'startContainer', args: { image: 'alpine:3.20', project: 'ro' } }]]);
    expect(host.confirmations[0]?.prompt).toContain(`project ${project} mounted read-only at /workspace`);
    const [spec] = engine.callsOf('createContainer').map(([s]) => s);
    expect(spec?.binds).toEqual([{ hostPath: project, containerPath: '/workspace', readOnly: true }]);
    expect(answer).toMatchObject({ project: 'read-only at /workspace' });
    expect(userText).toContain('with the project read-only at /workspace');
  });

  test('project rw: an overlay of the project (never a writable bind), and the user is told the mount is writable', async () => {
    const logs = tempDir('gcd-other-logs-');
    const { act, engine, host, project } = setup({ config: { project: { mount: 'rw' }, logs: { dir: logs }, user: '1000:1000' } });
    mkdirSync(join(project, '.git'));
    const { answer } = await act('startContainer', [[{ name: 'startContainer', args: { image: 'alpine:3.20', project: 'rw' } }]]);
    expect(host.confirmations[0]?.prompt).toContain(
      'mounted WRITABLE (changes applied after each command, checked; files the host runs held back)',
    );
    const [spec] = engine.callsOf('createContainer').map(([s]) => s);
    // The project is no bind: only the lease file, read-only, outside the working folder.
    expect(spec?.binds).toEqual([expect.objectContaining({ containerPath: '/.genaicode-docker-lease', readOnly: true })]);
    expect(spec?.overlayVolumes).toEqual([expect.objectContaining({ containerPath: '/workspace', lowerDir: project })]);
    expect(answer).toMatchObject({ project: 'writable at /workspace' });
  });

  test.each([
    ['ro', 'rw'],
    ['none', 'ro'],
  ] as const)('project.mount %s: asking %s is a POLICY_VIOLATION before the user is asked', async (allowed, asked) => {
    const { act, engine, host } = setup({ config: { project: { mount: allowed } } });
    const { answer } = await act('startContainer', [[{ name: 'startContainer', args: { image: 'alpine:3.20', project: asked } }]]);
    expect(answer).toMatchObject({ code: 'POLICY_VIOLATION' });
    expect(String(answer.error)).toContain(`project.mount allows at most ${allowed}`);
    expect(host.confirmations).toEqual([]);
    expect(actionCalls(engine)).toEqual([]);
  });

  test("a conversation's end removes its containers, not the kept one nor another conversation's", async () => {
    const { act, engine, host } = setup({ config: { plugin: { confirmStart: false } } });
    const conversation: PromptItem[] = [];
    const other: PromptItem[] = [];
    const started = async (args: Record<string, unknown>, prompt: PromptItem[]) =>
      String(
        (await act('startContainer', [[{ name: 'startContainer', args: { image: 'alpine:3.20', ...args } }]], { prompt })).answer.name,
      );
    const a = await started({ name: 'a' }, conversation);
    const kept = await started({ name: 'kept', keepAfterConversation: true }, conversation);
    const b = await started({ name: 'b' }, other);
    expect([a, kept, b]).toEqual(['a', 'kept', 'b']);
    await host.endConversation(conversation);
    const removed = engine.callsOf('removeContainer').map(([id]) => engine.containers.get(id)?.name ?? id);
    expect(engine.callsOf('removeContainer')).toHaveLength(1);
    expect(removed).not.toContain('kept');
    expect(host.messages.map((m) => m.text)).toContain('genaicode-docker: the conversation ended; removed container a.');
  });

  test("the user's interrupt ends the conversation: its containers are removed", async () => {
    const controller = new AbortController();
    const { act, engine, host } = setup({ config: { plugin: { confirmStart: false } }, host: { signal: controller.signal } });
    await act('startContainer', [[{ name: 'startContainer', args: { image: 'alpine:3.20', name: 'c1' } }]], { prompt: [] });
    host.signal = undefined;
    controller.abort();
    await tick(50);
    expect(engine.callsOf('removeContainer')).toHaveLength(1);
    expect(host.messages.map((m) => m.text)).toContain('genaicode-docker: the conversation interrupted; removed container c1.');
  });

  test('a removal that fails at the end of a conversation is reported, never silent', async () => {
    const { act, engine, host } = setup({ config: { plugin: { confirmStart: false } } });
    const conversation: PromptItem[] = [];
    await act('startContainer', [[{ name: 'startContainer', args: { image: 'alpine:3.20', name: 'stuck' } }]], { prompt: conversation });
    engine.fail('stopContainer', new SandboxError('ENGINE_ERROR', 'Stop container: HTTP 500'));
    engine.fail('removeContainer', new SandboxError('ENGINE_ERROR', 'Remove container: HTTP 500'));
    await host.endConversation(conversation);
    expect(host.messages.map((m) => m.text)).toContain(
      'genaicode-docker: the conversation ended, but container stuck (Remove container: HTTP 500) could not be removed; it is removed when GenAIcode exits or at its expiry.',
    );
  });
});

describe('confirming a start', () => {
  test('the question states image, name, memory and network; yes starts the container so configured', async () => {
    const { act, engine, host } = setup({ config: { limits: { memory: '256m' }, network: 'bridge' } });
    const { props, answer, userText } = await act('startContainer', [
      [{ id: 'start-1', name: 'startContainer', args: { image: 'alpine:3.20', name: 'box-1' } }],
    ]);

    expect(host.confirmations).toHaveLength(1);
    const [{ prompt, options }] = host.confirmations as [{ prompt: string; options: object }];
    expect(prompt).toContain('from alpine:3.20');
    expect(prompt).toContain('named box-1');
    expect(prompt).toContain('memory 256 MiB');
    expect(prompt).toContain('network bridge');
    expect(prompt).toContain('project not mounted');
    expect(options).toBe(props.options);

    const [spec] = engine.callsOf('createContainer').map(([s]) => s);
    expect(spec).toMatchObject({ image: 'alpine:3.20', name: 'box-1', network: 'bridge', memoryBytes: 256 * MiB });
    const id = engine.callsOf('startContainer')[0]![0];
    expect(answer).toEqual({
      id: id.slice(0, 12),
      name: 'box-1',
      status: 'running',
      image: 'alpine:3.20',
      expiresAt: expect.any(String),
      lifetime: 'removed when this conversation ends',
    });
    expect(Date.parse(String(answer.expiresAt))).toBeGreaterThan(Date.now());
    expect(userText).toBe('Started container box-1 from alpine:3.20.');
  });

  test('a decline answers USER_DECLINED and nothing reaches the engine', async () => {
    const { act, engine, host } = setup({ host: { answers: [false] } });
    const { answer, response, userText } = await act('startContainer', [
      [{ id: 'start-1', name: 'startContainer', args: { image: 'alpine:3.20' } }],
    ]);
    expect(host.confirmations).toHaveLength(1);
    expect(answer).toEqual({ error: 'The user declined to start a container from alpine:3.20.', code: 'USER_DECLINED' });
    expect(response).toMatchObject({ call_id: 'start-1', isError: true });
    expect(userText).toBe('The user declined to start a container from alpine:3.20.');
    expect(actionCalls(engine)).toEqual([]);
  });

  test('plugin.confirmStart false: no question, the container starts', async () => {
    const { act, engine, host } = setup({ config: { plugin: { confirmStart: false } } });
    const { answer } = await act('startContainer', [[{ name: 'startContainer', args: { image: 'alpine:3.20' } }]]);
    expect(host.confirmations).toEqual([]);
    expect(answer.status).toBe('running');
    expect(engine.callsOf('createContainer')).toHaveLength(1);
  });

  test('an image off the allowlist is IMAGE_NOT_ALLOWED before the user is asked', async () => {
    const { act, engine, host } = setup();
    const { answer } = await act('startContainer', [[{ name: 'startContainer', args: { image: 'evil/miner:1' } }]]);
    expect(answer).toMatchObject({ code: 'IMAGE_NOT_ALLOWED', image: 'evil/miner:1' });
    expect(host.confirmations).toEqual([]);
    expect(actionCalls(engine)).toEqual([]);
  });
});

describe('errors are answers, never throws', () => {
  test('an engine failure is { error, code, ...data } paired with the model’s call', async () => {
    const { act, engine } = setup({ config: { plugin: { confirmStart: false } } });
    engine.fail(
      'createContainer',
      new SandboxError('ENGINE_ERROR', 'Create container: HTTP 500 from the engine', { data: { status: 500 } }),
    );
    const call = { id: 'start-7', name: 'startContainer', args: { image: 'alpine:3.20', name: 'box' } };
    const { result, answer, response, item, userText } = await act('startContainer', [[call]]);

    expect(answer).toEqual({ error: 'Create container: HTTP 500 from the engine', code: 'ENGINE_ERROR', status: 500 });
    expect(response).toMatchObject({ name: 'startContainer', call_id: 'start-7', isError: true });
    expect(item.assistant).toEqual({ type: 'assistant', text: 'I will use startContainer.', functionCalls: [call] });
    expect(userText).toBe('startContainer failed: Create container: HTTP 500 from the engine');
    expect(result.breakLoop).toBe(false);
  });

  test('a missing image with pulls off is IMAGE_NOT_FOUND, with no pull', async () => {
    const { act, engine } = setup({ config: { plugin: { confirmStart: false }, images: { pull: false } }, engine: { images: [] } });
    const { answer, response } = await act('startContainer', [[{ id: 'start-1', name: 'startContainer', args: { image: 'alpine:3.19' } }]]);
    expect(answer).toMatchObject({ code: 'IMAGE_NOT_FOUND', image: 'alpine:3.19' });
    expect(answer.error).toContain('images.pull=false');
    expect(response.call_id).toBe('start-1');
    expect(engine.callsOf('pullImage')).toEqual([]);
    expect(engine.callsOf('createContainer')).toEqual([]);
  });

  test('an unexpected throw (the host’s question fails) is INTERNAL_ERROR, paired with the model’s call', async () => {
    const { act, engine } = setup({ host: { otherwise: new Error('the confirmation view was closed') } });
    const { answer, response } = await act('startContainer', [[{ id: 'start-3', name: 'startContainer', args: { image: 'alpine:3.20' } }]]);
    expect(answer).toEqual({ error: 'the confirmation view was closed', code: 'INTERNAL_ERROR' });
    expect(response).toMatchObject({ name: 'startContainer', call_id: 'start-3', isError: true });
    expect(engine.callsOf('createContainer')).toEqual([]);
  });

  test('a model call that throws is INTERNAL_ERROR under the action’s name', async () => {
    const { act } = setup();
    const { answer, response } = await act('stopContainer', [new Error('HTTP 503 from the model service')]);
    expect(answer).toEqual({ error: 'HTTP 503 from the model service', code: 'INTERNAL_ERROR' });
    expect(response).toMatchObject({ name: 'stopContainer', call_id: 'stopContainer-error', isError: true });
  });
});

describe('runCommand and stopContainer', () => {
  test('an unknown containerId is CONTAINER_NOT_FOUND naming the live containers; no command runs', async () => {
    const { act, start, engine } = setup({ config: { plugin: { confirmStart: false } } });
    await start('box-a');
    await start('box-b');
    const { answer, response } = await act('runCommand', [[{ id: 'run-1', name: 'runCommand', args: { containerId: 'nope', cmd: 'ls' } }]]);
    expect(answer).toEqual({
      error: 'No container "nope" was started in this session; live: box-a, box-b.',
      code: 'CONTAINER_NOT_FOUND',
      containerId: 'nope',
    });
    expect(response).toMatchObject({ call_id: 'run-1', isError: true });
    expect(engine.execsOf('command')).toEqual([]);
  });

  test('with none live, CONTAINER_NOT_FOUND says to start one', async () => {
    const { act } = setup();
    const { answer } = await act('runCommand', [[{ name: 'runCommand', args: { containerId: 'nope', cmd: 'ls' } }]]);
    expect(answer.error).toBe('No container "nope" was started in this session; start one with startContainer.');
  });

  test('the user’s line names control characters the model put in the command; the container gets the command as sent', async () => {
    const { act, start, engine } = setup({ config: { plugin: { confirmStart: false } } });
    await start('box');
    const cmd = "printf '\u001b[2J'\necho done";
    const { userText, answer } = await act('runCommand', [[{ name: 'runCommand', args: { containerId: 'box', cmd } }]]);
    expect(userText).toMatch(/^box\$ printf '\\x1b\[2J'\\necho done -> exit 0; log: \S+\.log$/);
    expect(userText).not.toMatch(RAW_CONTROL);
    expect(answer.exitCode).toBe(0);
    expect(engine.execsOf('command').map((e) => commandOf(e.spec))).toEqual([cmd]);
  });

  test('the user’s line of an error names invisible characters too', async () => {
    const { act } = setup();
    const { userText } = await act('runCommand', [[{ name: 'runCommand', args: { containerId: 'bo\u202ex', cmd: 'ls' } }]]);
    expect(userText).toContain('bo<U+202E>x');
    expect(userText).not.toContain('\u202e');
  });

  test('long output is summarized on the lite tier, by one standalone call', async () => {
    const long = Array.from({ length: 400 }, (_, i) => `line ${i}: compiling module ${i}`).join('\n');
    const { act, start } = setup({
      config: { plugin: { confirmStart: false } },
      engine: { script: () => ({ frames: [out(`${long}\nerror: module 399 failed\n`)], exitCode: 2 }) },
    });
    await start('box');
    const { model, answer, props } = await act('runCommand', [
      [{ name: 'runCommand', args: { containerId: 'box', cmd: 'make' } }],
      [{ name: 'summarizeOutput', args: { summary: 'The build failed in module 399.' } }],
    ]);
    expect(model.offered()).toEqual([['runCommand'], ['summarizeOutput']]);
    const summarize = model.calls[1]!;
    expect(summarize.modelType).toBe(TIERS.lite);
    expect(summarize.options).toBe(props.options);
    expect(summarize.prompt.map((p) => p.type)).toEqual(['systemPrompt', 'user']);
    expect(ScriptedModel.userText(summarize)).toContain('Command: make\nExit code: 2');
    expect(answer).toMatchObject({ exitCode: 2, summary: 'FAILED: exit code 2.\nThe build failed in module 399.' });
    expect(answer['logPath']).toBeUndefined();
    expect(answer.keyLines).toContain('error: module 399 failed');
  });

  test('stopContainer stops and removes it; a second stop is CONTAINER_NOT_FOUND', async () => {
    const { act, start, engine } = setup({ config: { plugin: { confirmStart: false } } });
    await start('box');
    const id = engine.callsOf('startContainer')[0]![0];
    const first = await act('stopContainer', [[{ name: 'stopContainer', args: { containerId: 'box' } }]]);
    expect(first.answer).toEqual({ status: 'removed', name: 'box' });
    expect(engine.callsOf('stopContainer').map(([c]) => c)).toEqual([id]);
    expect(engine.containers.size).toBe(0);
    const again = await act('stopContainer', [[{ name: 'stopContainer', args: { containerId: 'box' } }]]);
    expect(again.answer.code).toBe('CONTAINER_NOT_FOUND');
  });
});

describe('the system prompt section', () => {
  test('names every action and the configured limits', () => {
    const config = testConfig({ limits: { memory: '256m' }, exec: { timeoutMs: 30_000 }, network: 'bridge' });
    const text = dockerSystemPrompt(config, { task: true });
    for (const action of ['startContainer', 'runCommand', 'stopContainer', 'runContainerTask']) expect(text).toContain(`plugin:${action}(`);
    expect(text).toContain(`default image ${config.images.default}`);
    expect(text).toContain('alpine:*');
    expect(text).toContain('network bridge');
    expect(text).toContain('memory 256 MiB');
    expect(text).toContain('time out after 30 s');
  });

  test('without the task action or a configuration, neither is mentioned', () => {
    const text = dockerSystemPrompt(undefined, { task: false });
    expect(text).toContain('plugin:runCommand(');
    expect(text).not.toContain('runContainerTask');
    expect(text).not.toContain('Sandbox:');
  });
});

describe('runContainerTask', () => {
  const TASK = 'Print hello with echo and check that it printed.';

  test('the inner loop runs the scripted steps on the lite tier, summarizes on the default tier, and stops the container', async () => {
    const { act, engine, host } = setup({
      engine: { script: (_id, spec) => ({ frames: commandOf(spec) === 'echo hello' ? [out('hello\n')] : [], exitCode: 0 }) },
    });
    const { model, answer, response, userText } = await act('runContainerTask', [
      [{ id: 'task-1', name: 'runContainerTask', args: { image: 'alpine:3.20', taskDescription: TASK } }],
      [{ name: 'nextCommand', args: { command: 'echo hello', reasoning: 'print it' } }],
      [{ name: 'taskComplete', args: { summary: 'hello was printed' } }],
      [{ name: 'taskSummary', args: { summary: 'Printed hello.' } }],
    ]);

    expect(model.offered()).toEqual([
      ['runContainerTask'],
      ['nextCommand', 'taskComplete', 'taskFailed'],
      ['nextCommand', 'taskComplete', 'taskFailed'],
      ['taskSummary'],
    ]);
    expect(model.calls.map((c) => c.modelType)).toEqual([TIERS.cheap, TIERS.lite, TIERS.lite, TIERS.default]);
    // Each inner call is a standalone prompt, not the conversation.
    expect(model.calls[1]!.prompt.map((p) => p.type)).toEqual(['systemPrompt', 'user']);
    expect(ScriptedModel.userText(model.calls[1]!)).toContain(`Overall Task:\n${TASK}`);
    expect(ScriptedModel.userText(model.calls[2]!)).toContain('#1 $ echo hello\nhello\n-> exit 0');

    expect(response).toMatchObject({ name: 'runContainerTask', call_id: 'task-1' });
    expect(answer).toEqual({
      success: true,
      summary: 'The task was completed. Printed hello.',
      logPath: expect.any(String),
      commandsRun: 1,
    });
    const log = readFileSync(String(answer.logPath), 'utf8');
    expect(log).toContain('$ echo hello\nhello\n');
    expect(userText).toMatch(/^runContainerTask succeeded after 1 command; log: /);

    // Asked first, for a task container on the task network.
    expect(host.confirmations).toHaveLength(1);
    expect(host.confirmations[0]!.prompt).toContain('for a multi-step task');
    expect(host.confirmations[0]!.prompt).toContain('network bridge');
    const [spec] = engine.callsOf('createContainer').map(([s]) => s);
    expect(spec?.network).toBe('bridge');
    // Stopped (and so removed) at the end.
    const id = engine.callsOf('startContainer')[0]![0];
    expect(engine.callsOf('stopContainer').map(([c]) => c)).toEqual([id]);
    expect(engine.containers.size).toBe(0);
    expect(host.messageTexts()).toEqual(
      expect.arrayContaining([expect.stringMatching(/^runContainerTask: running in /), 'runContainerTask step 1: `echo hello` -> exit 0']),
    );
  });

  test('a container that cannot be removed at the end does not hide the task’s result: the answer says so', async () => {
    const { act, engine } = setup({ config: { plugin: { confirmStart: false } } });
    engine.fail('stopContainer', new SandboxError('ENGINE_ERROR', 'Stop container: HTTP 500'));
    engine.fail('removeContainer', new SandboxError('ENGINE_ERROR', 'Remove container: HTTP 500'));
    const { answer, userText } = await act('runContainerTask', [
      [{ id: 'task-1', name: 'runContainerTask', args: { image: 'alpine:3.20', taskDescription: TASK } }],
      [{ name: 'nextCommand', args: { command: 'echo hello' } }],
      [{ name: 'taskComplete', args: {} }],
      [{ name: 'taskSummary', args: { summary: 'Printed hello.' } }],
    ]);
    expect(answer).toMatchObject({ success: true, commandsRun: 1, summary: 'The task was completed. Printed hello.' });
    expect(String(answer['cleanup'])).toMatch(/could not be removed \(Remove container: HTTP 500\); it is removed when GenAIcode exits/);
    expect(userText).toContain('not removed: Remove container: HTTP 500');
  });

  test('the model’s maxCommands lowers the limit; a task that does not succeed still stops its container', async () => {
    const { act, engine } = setup({ config: { plugin: { confirmStart: false } } });
    let n = 0;
    const model = new ScriptedModel(
      [[{ name: 'runContainerTask', args: { image: 'alpine:3.20', taskDescription: TASK, maxCommands: 2 } }]],
      (c) =>
        c.functionDefs[0]?.name === 'taskSummary'
          ? [{ name: 'taskSummary', args: { summary: 'Ran out of commands.' } }]
          : [{ name: 'nextCommand', args: { command: `echo ${++n}` } }],
    );
    const { answer } = await act('runContainerTask', model);
    expect(answer).toMatchObject({ success: false, commandsRun: 2 });
    expect(String(answer.summary)).toContain('the limit of 2 commands');
    expect(engine.execsOf('command').map((e) => commandOf(e.spec))).toEqual(['echo 1', 'echo 2']);
    expect(engine.containers.size).toBe(0);
  });

  test('a throw inside the loop is INTERNAL_ERROR, and the container is still stopped', async () => {
    const { act, engine } = setup({ config: { plugin: { confirmStart: false } }, host: { failSystemMessage: /step 1/ } });
    const { answer, response } = await act('runContainerTask', [
      [{ id: 'task-9', name: 'runContainerTask', args: { image: 'alpine:3.20', taskDescription: TASK } }],
      [{ name: 'nextCommand', args: { command: 'echo hello' } }],
    ]);
    expect(answer).toEqual({ error: 'host UI failed on: runContainerTask step 1: `echo hello` -> exit 0', code: 'INTERNAL_ERROR' });
    expect(response).toMatchObject({ call_id: 'task-9', isError: true });
    expect(engine.callsOf('stopContainer')).toHaveLength(1);
    expect(engine.containers.size).toBe(0);
  });
});
