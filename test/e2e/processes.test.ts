/**
 * End-to-end: background processes of the BUILT plugin inside the real genaicode dispatcher,
 * a scripted model and a real engine. The model starts busybox httpd in the background,
 * waits for its port, requests a page from it in the same container, waits for and reads
 * the server's log, stops it (nothing of it left in ps), and stops the container.
 *
 * Requires `npx tsc -p tsconfig.build.json` first (the plugin is loaded from dist/).
 */
import { randomBytes } from 'node:crypto';
import { MINIMAL_IMAGE } from '../support/engine.js';
import { actionAnswer, allDestroyed, leftOf } from './docker-observe.js';
import { askQuestion, type ScriptEntry } from './harness/harness.js';
import { E2E_HOST } from './harness/host.js';
import { END, expectRunOk, pluginCall, setUpScenarios, type Observe } from './harness/scenarios.js';

const RUN = randomBytes(3).toString('hex');
const NAME = `e2e-procs-${RUN}`;
const CHILD_TIMEOUT_MS = 150_000;
const TEST_TIMEOUT_MS = 180_000;

function act(action: string, args: Record<string, unknown>): ScriptEntry[] {
  return [askQuestion(`plugin:${action}`, `Doing ${action}`), pluginCall(action, args as never)];
}

function startAll(observe: Observe) {
  const main = observe({
    explicitPrompt: 'Start a web server, check it serves the page, read its log, stop it.',
    script: [
      ...act('startContainer', { image: MINIMAL_IMAGE, name: NAME }),
      ...act('runCommand', { containerId: NAME, cmd: 'mkdir -p /tmp/www && echo hello-e2e > /tmp/www/index.html' }),
      ...act('runCommand', { containerId: NAME, cmd: 'httpd -f -vv -p 8080 -h /tmp/www', background: true }),
      ...act('waitForPort', { containerId: NAME, port: 8080, timeoutMs: 30_000 }),
      ...act('runCommand', { containerId: NAME, cmd: 'wget -qO- http://127.0.0.1:8080/' }),
      ...act('waitForOutput', { containerId: NAME, processId: 'p1', pattern: 'response:200', timeoutMs: 30_000 }),
      ...act('readProcessOutput', { containerId: NAME, processId: 'p1' }),
      ...act('stopProcess', { containerId: NAME, processId: 'p1' }),
      ...act('runCommand', { containerId: NAME, cmd: 'ps -o args | grep -c "^httpd" || true' }),
      ...act('listProcesses', { containerId: NAME }),
      ...act('stopContainer', { containerId: NAME }),
      END,
    ],
  });
  return { main };
}

const scenario = setUpScenarios({ childTimeoutMs: CHILD_TIMEOUT_MS, start: startAll });

describe(`background processes in genaicode ${E2E_HOST.version} (scripted model, real engine)`, () => {
  test(
    'an HTTP server in the background: its port waited for, a request served, its log read, stopped, nothing left',
    async () => {
      const o = await scenario('main');
      expectRunOk(o);
      const a = (n: number) => actionAnswer(o.run, n).value;
      expect(a(2)).toMatchObject({ processId: 'p1', status: 'running' });
      expect(a(3)).toMatchObject({ port: 8080, listening: true });
      expect(a(4)).toMatchObject({ exitCode: 0, output: 'hello-e2e\n' });
      expect(a(5)).toMatchObject({ found: true, text: expect.stringContaining('response:200') });
      expect(a(6)).toMatchObject({ status: 'running', fromLine: 1, output: expect.stringContaining('url:/') });
      expect(a(7)).toMatchObject({ status: 'stopped', verified: true });
      expect(a(8)).toMatchObject({ exitCode: 0, output: '0\n' });
      expect(a(9)).toEqual({ processes: [expect.objectContaining({ processId: 'p1', status: 'stopped' })] });
      expect(a(10)).toMatchObject({ status: 'removed' });
      expect(allDestroyed(o.events)).toBe(true);
      expect(await leftOf(o.pid)).toEqual([]);
    },
    TEST_TIMEOUT_MS,
  );
});
