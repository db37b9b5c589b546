/**
 * The host adapter without a host: which GenAIcode a process runs (found on disk, from
 * folders laid out like 0.9.5, 1.x, a 1.x checkout and npm's 2.x toolkit), and the one
 * function through which every model call passes, in both calling conventions and for
 * every answer shape.
 */
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { hostProfile, locateHost, NO_HOST, type HostPackage } from '../../../src/prompt/host/host-profile.js';
import { callModel, readModelAnswer, type ModelRequest } from '../../../src/prompt/host/model-call.js';
import { createDockerPlugin } from '../../../src/prompt/create-plugin.js';
import { dockerSystemPrompt } from '../../../src/prompt/system-prompt.js';
import { hostLine } from '../../../src/cli/doctor.js';
import { FakeEngine } from '../../support/fake-engine.js';
import { FakeHost, fakeProfile, handlerProps, ScriptedModel, TIERS } from '../../support/fake-host.js';
import { removeTempDirs, tempDir, testConfig } from '../helpers.js';

afterEach(() => removeTempDirs());

function write(path: string, text = ''): void {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, text);
}

/** A genaicode package folder with the files each release has where the profile looks. */
function fakeGenaicode(dir: string, version: string | undefined, kind: '0.9.5' | '1.x' | '2.x', withSources = false): string {
  write(
    join(dir, 'package.json'),
    JSON.stringify({ name: 'genaicode', ...(version ? { version } : {}), main: 'dist/index.js', bin: './bin/genaicode.cjs' }),
  );
  write(join(dir, 'dist', 'index.js'));
  write(join(dir, 'bin', 'genaicode.cjs'));
  if (kind === '0.9.5') write(join(dir, 'dist', 'prompt', 'steps', 'step-ask-question', 'step-ask-question-handlers.js'));
  if (kind === '1.x') {
    write(join(dir, 'dist', 'prompt', 'steps', 'step-iterate', 'step-iterate-handlers.js'));
    write(join(dir, 'dist', 'prompt', 'steps', 'step-iterate', 'handlers', 'handle-run-container-task.js'));
  }
  if (withSources) write(join(dir, 'src', 'main', 'codegen.ts'));
  return dir;
}

describe('which GenAIcode runs the process', () => {
  test("the package whose command started the process wins over the one beside the plugin and the project's", () => {
    const t = tempDir('gcd-hosts-');
    const global = fakeGenaicode(join(t, 'global', 'genaicode'), '1.0.1', '1.x');
    const beside = fakeGenaicode(join(t, 'plugin', 'node_modules', 'genaicode'), '0.9.5', '0.9.5');
    const project = fakeGenaicode(join(t, 'project', 'node_modules', 'genaicode'), '0.9.5', '0.9.5');
    // `genaicode` on the PATH is a link to the package's bin, as npm makes it.
    mkdirSync(join(t, 'bin'));
    symlinkSync(join(global, 'bin', 'genaicode.cjs'), join(t, 'bin', 'genaicode'));
    const found = locateHost({ script: join(t, 'bin', 'genaicode'), pluginDir: join(t, 'plugin', 'dist'), cwd: join(t, 'project') });
    expect(found).toEqual({ root: global, version: '1.0.1', layout: 'dist' });
    // Started some other way (a test runner, a script of the user's): the one beside the plugin, then the project's.
    expect(locateHost({ script: join(t, 'other.mjs'), pluginDir: join(t, 'plugin', 'dist'), cwd: join(t, 'project') })?.root).toBe(beside);
    expect(locateHost({ pluginDir: join(t, 'nowhere'), cwd: join(t, 'project', 'src') })?.root).toBe(project);
    expect(locateHost({ pluginDir: join(t, 'nowhere'), cwd: join(t, 'nowhere') })).toBeUndefined();
  });

  test('a 1.x checkout started by its own command runs its TypeScript sources, unless --force-dist', () => {
    const t = tempDir('gcd-hosts-');
    const checkout = fakeGenaicode(join(t, 'genaicode'), '1.0.1', '1.x', true);
    const script = join(checkout, 'bin', 'genaicode.cjs');
    expect(locateHost({ script, args: ['--ui'] })?.layout).toBe('src');
    expect(locateHost({ script, args: ['--force-dist'] })?.layout).toBe('dist');
    const profile = hostProfile(locateHost({ script })!);
    expect(profile.moduleUrl('main/config.js')).toBe(`file://${join(checkout, 'src', 'main', 'config.ts')}`);
  });

  const at = (version: string | undefined, kind: '0.9.5' | '1.x' | '2.x'): HostPackage => ({
    root: fakeGenaicode(join(tempDir('gcd-host-'), 'genaicode'), version, kind),
    version,
    layout: 'dist',
  });

  test('0.9.5: positional calls, askQuestion, no lite tier, its handler table', () => {
    const p = hostProfile(at('0.9.5', '0.9.5'));
    expect(p).toMatchObject({ name: 'GenAIcode 0.9.5', convention: 'positional', dispatcher: 'askQuestion', builtinContainerTask: false });
    expect(p.tiers).toEqual({ lite: 'cheap', cheap: 'cheap', default: 'default' });
    expect(p.handlerTable?.table).toBe('prompt/steps/step-ask-question/step-ask-question-handlers.js');
    expect(p.notAnAgent).toBeUndefined();
  });

  test('1.x: config calls, iterate, the lite tier, its own container task, the moved handler table', () => {
    const p = hostProfile(at('1.0.1', '1.x'));
    expect(p).toMatchObject({ convention: 'config', dispatcher: 'iterate', builtinContainerTask: true });
    expect(p.tiers.lite).toBe('lite');
    expect(p.handlerTable?.table).toBe('prompt/steps/step-iterate/step-iterate-handlers.js');
  });

  test('a host whose version cannot be read is known by its files', () => {
    expect(hostProfile(at(undefined, '1.x'))).toMatchObject({ convention: 'config', dispatcher: 'iterate' });
    expect(hostProfile(at(undefined, '0.9.5'))).toMatchObject({ convention: 'positional', dispatcher: 'askQuestion' });
  });

  test("npm's 2.x toolkit is named as not a coding agent", () => {
    expect(hostProfile(at('2.3.0', '2.x')).notAnAgent).toBe(true);
  });

  test('outside a host: nothing to import', () => {
    expect(hostProfile(undefined)).toBe(NO_HOST);
    expect(NO_HOST.moduleUrl('main/config.js')).toBeUndefined();
  });
});

const REQUEST: ModelRequest = {
  prompt: [{ type: 'user', text: 'Summarize.' }],
  functionDefs: [{ name: 'summarizeOutput', description: 'd', parameters: { type: 'object', properties: {}, required: [] } }],
  tier: 'lite',
  temperature: 0.2,
};
const OPTIONS = { aiService: 'anthropic', askQuestion: true };

describe('callModel: every model call, in the host convention', () => {
  test('0.9.5: positional arguments, the tier by name, no required function, the host options passed back', async () => {
    const model = new ScriptedModel([[{ name: 'summarizeOutput', args: { summary: 's' } }]]);
    const answer = await callModel(fakeProfile('positional'), model.generateContentFn, OPTIONS, REQUEST);
    expect(answer).toEqual({ calls: [{ name: 'summarizeOutput', args: { summary: 's' } }], text: '' });
    expect(model.calls[0]).toMatchObject({
      convention: 'positional',
      functionDefs: REQUEST.functionDefs,
      requiredFunctionName: null,
      temperature: 0.2,
      modelType: TIERS.lite,
      options: OPTIONS,
    });
  });

  test('1.x: one config object with the definitions and the tier, only function calls expected, options never null', async () => {
    const model = new ScriptedModel([[{ name: 'summarizeOutput', args: { summary: 's' } }]], undefined, 'config');
    const answer = await callModel(fakeProfile('config'), model.generateContentFn, OPTIONS, { ...REQUEST, tier: 'default' });
    expect(answer.calls).toEqual([{ name: 'summarizeOutput', args: { summary: 's' } }]);
    expect(model.calls[0]).toMatchObject({
      convention: 'config',
      functionDefs: REQUEST.functionDefs,
      requiredFunctionName: null,
      modelType: TIERS.default,
      temperature: 0.2,
      options: OPTIONS,
      expectedResponseType: { text: false, functionCall: true, media: false },
    });
  });

  test('1.x: a model that answers text instead of a call gives the text and no call', async () => {
    const model = new ScriptedModel([{ text: 'I would rather explain.' }], undefined, 'config');
    expect(await callModel(fakeProfile('config'), model.generateContentFn, OPTIONS, REQUEST)).toEqual({
      calls: [],
      text: 'I would rather explain.',
    });
  });

  test('readModelAnswer: calls, parts, text parts, other parts, an empty or malformed answer', () => {
    expect(readModelAnswer([{ id: 'a', name: 'x', args: { k: 1 } }])).toEqual({
      calls: [{ id: 'a', name: 'x', args: { k: 1 } }],
      text: '',
    });
    expect(
      readModelAnswer([
        { type: 'text', text: 'thinking aloud' },
        { type: 'functionCall', functionCall: { name: 'x', args: { k: 2 } } },
        { type: 'media', media: { mediaType: 'image/png', base64url: '' } },
        { type: 'text', text: '  ' },
        { type: 'functionCall', functionCall: { args: {} } },
      ]),
    ).toEqual({ calls: [{ name: 'x', args: { k: 2 } }], text: 'thinking aloud' });
    expect(readModelAnswer([])).toEqual({ calls: [], text: '' });
    expect(readModelAnswer(undefined)).toEqual({ calls: [], text: '' });
    expect(readModelAnswer({ name: 'x' })).toEqual({ calls: [], text: '' });
    expect(readModelAnswer([null, 3, 'x', { name: 7 }])).toEqual({ calls: [], text: '' });
  });

  test('a call in the wrong convention is what the fake model refuses (so the tests above can fail)', async () => {
    const model = new ScriptedModel([[{ name: 'x' }]], undefined, 'config');
    await expect(callModel(fakeProfile('positional'), model.generateContentFn, OPTIONS, REQUEST)).rejects.toThrow(
      /called in the positional form/,
    );
  });
});

describe('the plugin on a 1.x host (fakes of our own ports)', () => {
  test('an action asks for its arguments in the config form and reads the parts; text first gets one retry', async () => {
    const engine = new FakeEngine({ images: ['alpine:3.20'] });
    const host = new FakeHost({ profile: fakeProfile('config') });
    const plugin = createDockerPlugin({ engine, host, cwd: tempDir('gcd-project-'), config: { logs: { dir: tempDir('gcd-logs-') } } });
    const model = new ScriptedModel(
      [{ text: 'Sure, starting one.' }, [{ name: 'startContainer', args: { image: 'alpine:3.20', name: 'iter' } }]],
      undefined,
      'config',
    );
    const props = {
      ...handlerProps('startContainer', model),
      askQuestionCall: undefined,
      iterateCall: { name: 'iterate', args: { actionType: 'plugin:startContainer', message: 'Starting.' } },
    };
    const result = await plugin.actionHandlers!.startContainer!.handler(props);
    const answer = JSON.parse(result.items[0]!.user.functionResponses![0]!.content!) as Record<string, unknown>;
    expect(answer).toMatchObject({ name: 'iter', status: 'running' });
    expect(model.calls.map((c) => [c.convention, c.modelType])).toEqual([
      ['config', TIERS.cheap],
      ['config', TIERS.cheap],
    ]);
    // The retry names what came back, so the model can correct itself.
    expect(ScriptedModel.userText(model.calls[1]!)).toContain('That was not a call to startContainer');
    // The dispatcher's message is the 1.x iterate call's.
    expect(result.items[0]!.assistant.text).toBe('Starting.');
    await plugin.actionHandlers!.stopContainer!.handler({
      ...props,
      generateContentFn: new ScriptedModel([[{ name: 'stopContainer', args: { containerId: 'iter' } }]], undefined, 'config')
        .generateContentFn,
    });
    expect(engine.containers.size).toBe(0);
  });

  test("the system prompt speaks the host's words and points away from 1.x's own container task", () => {
    const config = testConfig();
    const on1x = dockerSystemPrompt(config, { task: true }, fakeProfile('config'));
    expect(on1x).toContain('the actionType of iterate');
    expect(on1x).not.toContain('askQuestion');
    expect(on1x).toContain('Example: plugin:runContainerTask(');
    expect(on1x).toMatch(/GenAIcode's own runContainerTask .* use plugin:runContainerTask/);
    const on095 = dockerSystemPrompt(config, { task: true }, fakeProfile('positional'));
    expect(on095).toContain('the actionType of askQuestion');
    expect(on095).not.toContain("GenAIcode's own runContainerTask");
  });
});

describe('an interrupted step', () => {
  async function interrupted(convention: 'positional' | 'config') {
    const controller = new AbortController();
    controller.abort();
    const host = new FakeHost({ profile: fakeProfile(convention), signal: controller.signal });
    const plugin = createDockerPlugin({
      engine: new FakeEngine({ images: ['alpine:3.20'] }),
      host,
      cwd: tempDir('gcd-project-'),
      config: { logs: { dir: tempDir('gcd-logs-') } },
    });
    const model = new ScriptedModel([[{ name: 'readContainerFile', args: { containerId: 'gone', path: 'a.txt' } }]], undefined, convention);
    const result = await plugin.actionHandlers!.readContainerFile!.handler(handlerProps('readContainerFile', model));
    return { host, line: result.items[0]!.user.text! };
  }

  test('on a host that drops results after an interrupt (1.x), the outcome reaches the user as a system message', async () => {
    const { host, line } = await interrupted('config');
    expect(line).toMatch(/^readContainerFile failed: /);
    expect(host.messageTexts()).toContain(line);
  });

  test('on a host that shows them (0.9.5), it is not said twice', async () => {
    const { host, line } = await interrupted('positional');
    expect(host.messageTexts()).not.toContain(line);
  });
});

describe('doctor names the host', () => {
  const projectWith = (version: string, kind: '0.9.5' | '1.x' | '2.x') => {
    const project = tempDir('gcd-doctor-');
    fakeGenaicode(join(project, 'node_modules', 'genaicode'), version, kind);
    return project;
  };

  test("npm's 2.x toolkit: said plainly that it cannot load plugins", () => {
    expect(hostLine(projectWith('2.3.0', '2.x'))).toMatch(
      /GenAIcode 2\.3\.0 at .* is the LLM toolkit \(2\.x\), not the coding agent: it cannot load plugins/,
    );
  });

  test('1.x: its dispatcher, and how to switch its own container task off', () => {
    const line = hostLine(projectWith('1.0.1', '1.x'));
    expect(line).toMatch(/^host +GenAIcode 1\.0\.1 at .*: the model picks actions through iterate, calls models with a config object/);
    expect(line).toContain('"featuresEnabled": { "containerTask": false }');
  });

  test('0.9.5: askQuestion, positional calls, nothing more to do', () => {
    const line = hostLine(projectWith('0.9.5', '0.9.5'));
    expect(line).toMatch(/through askQuestion, calls models with positional arguments$/);
  });
});

describe('a host whose handler table moved', () => {
  test('the plugin says once, visibly, that it cannot see conversation ends', async () => {
    // A GenAIcode-shaped package whose version says 1.x but whose table is not where 1.x keeps it.
    const root = join(tempDir('gcd-moved-'), 'genaicode');
    write(join(root, 'package.json'), JSON.stringify({ name: 'genaicode', version: '1.9.0', type: 'module' }));
    write(
      join(root, 'dist', 'index.js'),
      'export const said = []; export function putSystemMessage(m) { said.push(m); } export async function askUserForConfirmation() { return { confirmed: true }; }',
    );
    write(join(root, 'dist', 'main', 'common', 'abort-controller.js'), 'export let abortController = null;');
    const profile = hostProfile({ root, version: '1.9.0', layout: 'dist' });
    const { genaicodeHost } = await import('../../../src/prompt/host/host-services.js');
    const host = await genaicodeHost(profile);
    const index = (await import(profile.moduleUrl('index.js')!)) as { said: string[] };
    expect(index.said).toHaveLength(1);
    expect(index.said[0]).toMatch(
      /cannot see when a conversation ends in GenAIcode 1\.9\.0 .* removed when GenAIcode exits, when they expire, or by stopContainer/,
    );
    host.systemMessage('later message');
    expect(index.said).toEqual([index.said[0], 'later message']);
  });
});
