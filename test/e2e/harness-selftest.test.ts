/**
 * Proves the e2e harness drives the real genaicode 0.9.5 ask-question dispatcher with the
 * scripted model: plugin loading, action dispatch, what the model is shown, the
 * system-prompt extension trick, a plugin's own model call, loud script failures, and
 * aborting a run with a signal. The facts it checks are 0.9.5's (its own validation of a
 * required function name, its messages): it runs on 0.9.5 only, and the 1.x run of the
 * end-to-end suite (`npm run test:e2e:1x`) leaves this file out.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  askQuestion,
  createProject,
  describeRun,
  expectCall,
  functionCall,
  getAskQuestionActionTypes,
  getLastUserMessage,
  getSystemPrompt,
  runGenaicode,
  startGenaicode,
  type CreateProjectOptions,
  type Project,
} from './harness/harness.js';
import { E2E_HOST } from './harness/host.js';

const ECHO_PLUGIN = path.join(path.dirname(fileURLToPath(import.meta.url)), 'fixtures', 'echo-plugin.mjs');

const projects: Project[] = [];
async function project(options: Omit<CreateProjectOptions, 'plugins'>): Promise<Project> {
  const p = await createProject({ plugins: [ECHO_PLUGIN], ...options });
  projects.push(p);
  return p;
}

beforeAll(() => {
  if (E2E_HOST.version !== '0.9.5')
    throw new Error(`the harness self-test checks genaicode 0.9.5's facts; GENAICODE_E2E_HOST names ${E2E_HOST.version}`);
});

afterAll(async () => {
  await Promise.all(projects.map((p) => p.cleanup()));
});

describe('e2e harness (genaicode 0.9.5, scripted model)', () => {
  test('dispatches plugin:echo and shows the model its description, reply and system prompt section', async () => {
    const p = await project({
      explicitPrompt: 'Please echo something.',
      script: [
        askQuestion('plugin:echo', 'hello from the scripted model'),
        expectCall('askQuestion', askQuestion('endConversation', 'Bye.'), { expectRequiredFunction: 'askQuestion' }),
      ],
    });
    const run = await runGenaicode(p, { timeoutMs: 60_000 });

    expect({ exitCode: run.exitCode, calls: run.calls.length }).toEqual({ exitCode: 0, calls: 2 });
    expect(run.unusedScriptEntries).toBe(0);
    const [first, second] = run.calls;
    if (!first || !second) throw new Error(describeRun(run));

    // The first call is genaicode's forced askQuestion.
    expect(first.requiredFunctionName).toBe('askQuestion');
    expect(first.modelType).toBe('cheap');
    const actionTypes = getAskQuestionActionTypes(first);
    expect(actionTypes?.enum).toEqual(expect.arrayContaining(['plugin:echo', 'endConversation', 'sendMessage']));
    expect(actionTypes?.description).toContain('- plugin:echo: Echo: repeats a message');

    // The not-awaited config.js import in the plugin lands in the very first system prompt.
    expect(getSystemPrompt(first)).toContain('# ADDITIONAL INSTRUCTIONS\n\nECHO-SECTION-MARKER');
    expect(getLastUserMessage(first)).toBe('Please echo something.');

    // The handler ran, and its reply is what the model sees next.
    expect(getLastUserMessage(second)).toBe('ECHO-REPLY: hello from the scripted model');
    expect(second.prompt.slice(-2)).toEqual([
      { type: 'assistant', text: 'hello from the scripted model' },
      { type: 'user', text: 'ECHO-REPLY: hello from the scripted model' },
    ]);

    // The runner's report: the end-of-conversation confirmation, the chat messages.
    expect(run.report?.confirmations.map((c) => c.prompt)).toEqual(['Do you want to end the conversation?']);
    expect(run.report?.messages.map((m) => m.content)).toContain('ECHO-REPLY: hello from the scripted model');
    expect(run.report?.genaicode?.version).toBe('0.9.5');
  });

  test("a handler's generateContentFn call: plugin-only definition works with null, fails validation when required", async () => {
    const p = await project({
      explicitPrompt: 'Echo what the model says.',
      script: [
        askQuestion('plugin:echo', '[ask-model] please'),
        expectCall('echoArgs', functionCall('echoArgs', { text: 'from-the-inner-call' }), {
          expectRequiredFunction: null,
          expectPromptIncludes: 'ECHO-INNER-REQUEST',
        }),
        askQuestion('plugin:echo', '[ask-model-required] please'),
        // genaicode validates against its own definitions: invalid, then a 'cheap' and a
        // 'default' recovery attempt, then AssertionError 'Recovery failed'.
        functionCall('echoArgs', { text: 'attempt-1' }),
        { expectModelType: 'cheap', call: functionCall('echoArgs', { text: 'attempt-2' }) },
        { expectModelType: 'default', call: functionCall('echoArgs', { text: 'attempt-3' }) },
        askQuestion('endConversation', 'Bye.'),
      ],
    });
    const run = await runGenaicode(p, { timeoutMs: 60_000 });
    expect(run.exitCode).toBe(0);
    expect(run.calls).toHaveLength(7);
    const calls = run.calls;

    // Only the plugin's definition was offered, with no required function name.
    expect(calls[1]?.functionDefNames).toEqual(['echoArgs']);
    expect(calls[1]?.requiredFunctionName).toBeNull();
    expect(getLastUserMessage(calls[2]!)).toBe('ECHO-REPLY: from-the-inner-call');

    expect(calls.slice(3, 6).map((c) => [c.requiredFunctionName, c.modelType])).toEqual([
      ['echoArgs', 'cheap'],
      ['echoArgs', 'cheap'],
      ['echoArgs', 'default'],
    ]);
    expect(getLastUserMessage(calls[4]!)).toContain('Function \\"echoArgs\\" is not defined.');
    expect(getLastUserMessage(calls[6]!)).toBe('ECHO-REPLY: ECHO-ERROR: Recovery failed');
  });

  test('a matcher that does not match fails loudly, and an exhausted script ends the run', async () => {
    const mismatch = await project({
      explicitPrompt: 'Run a command.',
      script: [expectCall('runCommand', functionCall('runCommand', { command: 'true' }), { label: 'wants runCommand' })],
    });
    const exhausted = await project({
      explicitPrompt: 'Echo once.',
      script: [askQuestion('plugin:echo', 'only one answer scripted')],
    });
    const [mismatchRun, exhaustedRun] = await Promise.all([
      runGenaicode(mismatch, { timeoutMs: 60_000 }),
      runGenaicode(exhausted, { timeoutMs: 60_000 }),
    ]);

    expect(mismatchRun.exitCode).toBe(3);
    expect(mismatchRun.calls).toHaveLength(1);
    expect(mismatchRun.calls[0]?.error).toMatch(
      /scripted model: call 0 \(script entry 0, "wants runCommand"\): expected function definition\(s\) \["runCommand"\] to be offered/,
    );
    expect(mismatchRun.stderr).toContain('expected function definition(s) ["runCommand"]');
    // genaicode itself swallowed the error into a chat message.
    expect(mismatchRun.report?.messages.map((m) => m.content)).toContainEqual(
      expect.stringContaining('An error occurred: scripted model: call 0'),
    );

    expect(exhaustedRun.exitCode).toBe(3);
    expect(exhaustedRun.timedOut).toBe(false);
    expect(exhaustedRun.calls.map((c) => c.error ?? null)).toEqual([null, 'scripted model: script exhausted at call 1']);
    expect(exhaustedRun.report?.scriptErrors).toEqual(['scripted model: script exhausted at call 1']);
  });

  test('startGenaicode: SIGTERM aborts the iteration like genaicode does, the handler sees it', async () => {
    const p = await project({
      explicitPrompt: 'Wait for me.',
      script: [askQuestion('plugin:echo', '[wait]'), askQuestion('endConversation', 'never reached')],
    });
    const child = startGenaicode(p, { timeoutMs: 60_000 });
    await child.waitForOutput('ECHO-WAITING');
    expect(await child.waitForCalls(1)).toHaveLength(1);
    child.kill('SIGTERM');
    const run = await child.result;

    expect(run.exitCode).toBe(143);
    expect(run.report?.signal).toBe('SIGTERM');
    // The handler returned once aborted; genaicode's loop checks the signal and stops
    // without another model call.
    expect(run.calls).toHaveLength(1);
    expect(run.unusedScriptEntries).toBe(1);
    expect(run.report?.messages.map((m) => m.content)).toEqual(
      expect.arrayContaining(['ECHO-REPLY: aborted', 'Assistant did not ask a question. This unexpected, we need to abort.']),
    );
  });
});
