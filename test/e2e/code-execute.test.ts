/**
 * End-to-end: `plugin:codeExecute` of the BUILT plugin inside the real genaicode 0.9.5
 * ask-question dispatcher, a scripted model, and a real Docker engine.
 *
 * Four snippets in one conversation: the first starts the kept-alive container (the user
 * confirms), the second reuses it and reads the file the first left, the third is running
 * when the container is removed from outside (`docker rm -f`), and the fourth gets a new
 * container and is told the state was lost. When genaicode ends, nothing is left.
 *
 * Requires `npx tsc -p tsconfig.build.json` first (the plugin is loaded from dist/).
 */
import { docker, waitFor } from '../support/engine.js';
import { actionAnswer, allDestroyed, createdIds, leftOf, ownerOf } from './docker-observe.js';
import { askQuestion, getAskQuestionActionTypes, getSystemPrompt } from './harness/harness.js';
import { E2E_HOST } from './harness/host.js';
import { END, expectRunOk, pluginCall, setUpScenarios, type Observe } from './harness/scenarios.js';

const CHILD_TIMEOUT_MS = 150_000;
const TEST_TIMEOUT_MS = 180_000;

function snippet(language: 'python' | 'bash', code: string) {
  return [askQuestion('plugin:codeExecute', `Running ${language}`), pluginCall('codeExecute', { language, code })];
}

function startAll(observe: Observe) {
  const main = observe(
    {
      explicitPrompt: 'Compute things with code.',
      confirmations: [{ confirmed: true, promptIncludes: 'to run python code from the model' }],
      script: [
        ...snippet('python', 'open("/tmp/state.txt", "w").write("from-one")\nprint("one")'),
        ...snippet('bash', 'cat /tmp/state.txt; echo " two"'),
        ...snippet('bash', 'echo started; sleep 30; echo never'),
        ...snippet('python', 'import os\nprint(os.path.exists("/tmp/state.txt"))'),
        END,
      ],
    },
    async (_child, pid) => {
      // The third snippet is sleeping in the container: remove the container from outside.
      const name = await waitFor(
        'the third snippet to sleep in the container',
        async () => {
          const ps = await docker(['ps', '--filter', `label=genaicode-docker.owner=${ownerOf(pid)}`, '--format', '{{.Names}}']);
          const container = ps.stdout.trim().split('\n')[0];
          if (!container) return undefined;
          const top = await docker(['top', container]);
          return top.code === 0 && top.stdout.includes('sleep 30') ? container : undefined;
        },
        100_000,
      );
      await docker(['rm', '-f', name]);
      return { removed: name };
    },
  );
  return { main };
}

const scenario = setUpScenarios({ childTimeoutMs: CHILD_TIMEOUT_MS, start: startAll });

describe(`genaicode-docker codeExecute in genaicode ${E2E_HOST.version} (scripted model, real engine)`, () => {
  test(
    'two calls reuse one container; after it is removed from outside, the next gets a new one and says the state was lost; nothing is left',
    async () => {
      const o = await scenario('main');
      expectRunOk(o);
      const answers = [0, 1, 2, 3].map((n) => actionAnswer(o.run, n));
      expect(answers.map((a) => [a.name, a.isError])).toEqual([
        ['codeExecute', false],
        ['codeExecute', false],
        ['codeExecute', false],
        ['codeExecute', false],
      ]);
      expect(answers[0]!.value).toEqual({ exitCode: 0, stdout: 'one\n', container: 'new' });
      expect(answers[1]!.value).toEqual({ exitCode: 0, stdout: 'from-one two\n', container: 'reused' });
      // The third was cut short by the removal: the answer says so, with what it printed.
      expect(answers[2]!.value).toMatchObject({ stdout: 'started\n', container: 'reused' });
      expect(String(answers[2]!.value['reason'])).toMatch(/removed|stopped|killed/);
      expect(answers[3]!.value).toMatchObject({ exitCode: 0, stdout: 'False\n', container: 'new' });
      // Found gone before reuse, or while the engine was still removing it (stopped).
      expect(String(answers[3]!.value['stateLost'])).toMatch(/gone|stopped/);
      // Two containers in all, both removed: the one removed from outside, and the second when genaicode ended.
      expect(createdIds(o.events)).toHaveLength(2);
      expect(allDestroyed(o.events)).toBe(true);
      expect(await leftOf(o.pid)).toEqual([]);
      // The model was told about the action and its sandbox.
      const first = o.run.calls[0]!;
      expect(getAskQuestionActionTypes(first)?.enum).toContain('plugin:codeExecute');
      expect(getSystemPrompt(first)).toMatch(/plugin:codeExecute\(\{ language: "python" \| "bash", code, timeoutSeconds\? \}\)/);
      expect(getSystemPrompt(first)).toMatch(/python3, bash and curl/);
    },
    TEST_TIMEOUT_MS,
  );
});
