/**
 * End-to-end, seed 004: per-task containers with the project mounted, in the real
 * genaicode 0.9.5 dispatcher with a scripted model and a real engine (the BUILT plugin,
 * dist/plugin.js).
 *
 *  - seedFlow: `runContainerTask { language: "python", project: "rw" }` on a project whose
 *    test fails: the inner loop runs the tests (1 failed), fixes calc.py, runs them again
 *    (1 passed); the answer lists the change, the host file has the fix, owned by the
 *    user, and no container is left.
 *  - ended / kept: a container started in a conversation is removed when the model ends
 *    the conversation (before genaicode exits), unless the model asked to keep it.
 */
import { readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { MINIMAL_IMAGE } from '../support/engine.js';
import { actionAnswer, leftOf } from './docker-observe.js';
import { askQuestion, functionCall, type ScriptEntry } from './harness/harness.js';
import { E2E_HOST } from './harness/host.js';
import { END, expectRunOk, pluginCall, setUpScenarios, type Observe } from './harness/scenarios.js';

const isRoot = process.getuid?.() === 0;
/** A developer's ids, for the project a root test run hands to "the user". */
const DEV = { uid: 1000, gid: 1000 };
const owner = isRoot ? DEV : { uid: process.getuid?.() ?? 0, gid: process.getgid?.() ?? 0 };

const STEP_FUNCTIONS = ['nextCommand', 'taskComplete', 'taskFailed'];
function step(label: string, name: string, args: Record<string, string>): ScriptEntry {
  return {
    label,
    expectFunction: STEP_FUNCTIONS,
    expectRequiredFunction: null,
    expectModelType: E2E_HOST.tiers.lite,
    call: functionCall(name, args),
  };
}

const TEST_CMD = 'python3 -B -m pytest -q -p no:cacheprovider';
const FIX_CMD = "sed -i 's/a - b/a + b/' calc.py";

function startAll(observe: Observe) {
  const seedFlow = observe({
    explicitPrompt: 'Make the tests of this project pass.',
    files: {
      'calc.py': 'def add(a, b):\n    return a - b\n',
      'tests/test_calc.py': 'from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n',
      '.genaicode-docker.json': JSON.stringify({ task: { network: 'none' } }),
    },
    ...(isRoot ? { owner: DEV } : {}),
    env: { GENAICODE_DOCKER_PROJECT_MOUNT: 'rw' },
    script: [
      askQuestion('plugin:runContainerTask', 'Running the tests in a container with the project'),
      pluginCall('runContainerTask', {
        language: 'python',
        project: 'rw',
        taskDescription: 'Run the tests with pytest, fix calc.py so that they pass, and run them again.',
      }),
      step('run the tests', 'nextCommand', { command: TEST_CMD }),
      step('fix', 'nextCommand', { command: FIX_CMD }),
      step('run again', 'nextCommand', { command: TEST_CMD }),
      step('done', 'taskComplete', { summary: 'the test passes' }),
      {
        label: 'task summary',
        expectFunction: 'taskSummary',
        expectRequiredFunction: null,
        expectModelType: 'default',
        call: functionCall('taskSummary', { summary: 'calc.add subtracted; fixed; 1 passed.' }),
      },
      END,
    ],
  });

  const ended = observe({
    explicitPrompt: 'Start a sandbox and end.',
    script: [
      askQuestion('plugin:startContainer', 'Starting'),
      pluginCall('startContainer', { image: MINIMAL_IMAGE, name: 'e2e-ends' }),
      END,
    ],
  });

  const kept = observe({
    explicitPrompt: 'Start a sandbox to keep and end.',
    script: [
      askQuestion('plugin:startContainer', 'Starting'),
      pluginCall('startContainer', { image: MINIMAL_IMAGE, name: 'e2e-kept', keepAfterConversation: true }),
      END,
    ],
  });
  return { seedFlow, ended, kept };
}

const scenario = setUpScenarios({ childTimeoutMs: 150_000, start: startAll });

describe(`seed 004 in genaicode ${E2E_HOST.version} (scripted model, real engine)`, () => {
  test("runContainerTask { language: 'python', project: 'rw' }: failing test, fix, passing test; the change list; no container left", async () => {
    const o = await scenario('seedFlow');
    expectRunOk(o);
    const answer = JSON.parse(actionAnswer(o.run, 0).content) as Record<string, unknown>;
    expect(answer).toMatchObject({
      success: true,
      commandsRun: 3,
      image: 'genaicode-docker/python:latest',
      projectChanges: { created: [], changed: ['calc.py'], deleted: [], counts: { created: 0, changed: 1, deleted: 0 } },
    });
    // The inner loop saw the failure, then the pass.
    const stepPrompts = o.run.calls.filter((c) => c.functionDefNames.includes('nextCommand')).map((c) => JSON.stringify(c.prompt));
    expect(stepPrompts[1]).toMatch(/1 failed/);
    expect(stepPrompts[3]).toMatch(/1 passed/);
    const calc = path.join(o.project.projectDir, 'calc.py');
    expect(readFileSync(calc, 'utf8')).toBe('def add(a, b):\n    return a + b\n');
    expect({ uid: statSync(calc).uid, gid: statSync(calc).gid }).toEqual(owner);
    expect(await leftOf(o.pid)).toEqual([]);
  }, 180_000);

  test('the end of the conversation removes its container, before genaicode exits', async () => {
    const o = await scenario('ended');
    expectRunOk(o);
    expect(JSON.parse(actionAnswer(o.run, 0).content)).toMatchObject({ name: 'e2e-ends', lifetime: 'removed when this conversation ends' });
    expect(o.run.stdout).toContain('genaicode-docker: the conversation ended; removed container e2e-ends.');
    const destroyed = o.events.find((e) => e.Action === 'destroy');
    expect(destroyed).toBeDefined();
    expect(destroyed!.time * 1000).toBeLessThanOrEqual(o.exitedAt);
    expect(await leftOf(o.pid)).toEqual([]);
  }, 180_000);

  test('a container the model asked to keep outlives the conversation (the exit hook removes it with genaicode)', async () => {
    const o = await scenario('kept');
    expectRunOk(o);
    expect(JSON.parse(actionAnswer(o.run, 0).content)).toMatchObject({
      name: 'e2e-kept',
      lifetime: 'kept after this conversation, until stopContainer or expiresAt',
    });
    expect(o.run.stdout).not.toContain('the conversation ended; removed container');
    expect(await leftOf(o.pid)).toEqual([]);
  }, 180_000);
});
