/**
 * End-to-end: the file actions of the BUILT plugin inside the real genaicode 0.9.5
 * dispatcher, a scripted model and a real engine (seed 002). The model writes a Python
 * file, runs it with runCommand, reads a range of the file it wrote, edits one line, runs
 * it again and reads the new output; a path out of the working folder is refused.
 *
 * Requires `npx tsc -p tsconfig.build.json` first (the plugin is loaded from dist/).
 */
import { randomBytes } from 'node:crypto';
import { PYTHON_IMAGE } from '../support/engine.js';
import { actionAnswer, allDestroyed, leftOf } from './docker-observe.js';
import { askQuestion, type ScriptEntry } from './harness/harness.js';
import { E2E_HOST } from './harness/host.js';
import { END, expectRunOk, pluginCall, setUpScenarios, type Observe } from './harness/scenarios.js';

const RUN = randomBytes(3).toString('hex');
const NAME = `e2e-files-${RUN}`;
const CHILD_TIMEOUT_MS = 150_000;
const TEST_TIMEOUT_MS = 180_000;

const PROGRAM = [
  'factor = 2',
  'with open("out.txt", "w") as f:',
  '    for i in range(1, 21):',
  '        f.write(f"row {i}: {i * factor}\\n")',
  'print("done")',
  '',
].join('\n');

function act(action: string, args: Record<string, unknown>): ScriptEntry[] {
  return [askQuestion(`plugin:${action}`, `Doing ${action}`), pluginCall(action, args as never)];
}

function startAll(observe: Observe) {
  const main = observe({
    explicitPrompt: 'Write a program, run it, check its output, fix it.',
    script: [
      ...act('startContainer', { image: PYTHON_IMAGE, name: NAME }),
      ...act('writeContainerFile', { containerId: NAME, path: 'gen/rows.py', content: PROGRAM }),
      ...act('runCommand', { containerId: NAME, cmd: 'cd gen && python3 rows.py' }),
      ...act('readContainerFile', { containerId: NAME, path: 'gen/out.txt', startLine: 9, endLine: 11 }),
      ...act('editContainerFile', { containerId: NAME, path: 'gen/rows.py', oldText: 'factor = 2', newText: 'factor = 3' }),
      // The shell is kept: the first run's `cd gen` still holds.
      ...act('runCommand', { containerId: NAME, cmd: 'python3 rows.py' }),
      ...act('readContainerFile', { containerId: NAME, path: '/workspace/gen/out.txt', startLine: 10, endLine: 10 }),
      ...act('readContainerFile', { containerId: NAME, path: '../etc/passwd' }),
      ...act('listContainerDirectory', { containerId: NAME, path: 'gen' }),
      ...act('stopContainer', { containerId: NAME }),
      END,
    ],
  });
  return { main };
}

const scenario = setUpScenarios({ childTimeoutMs: CHILD_TIMEOUT_MS, start: startAll });

describe(`file actions in genaicode ${E2E_HOST.version} (scripted model, real engine)`, () => {
  test(
    'write a Python file, run it, read a range of its output, edit one line, run again; a path out is refused',
    async () => {
      const o = await scenario('main');
      expectRunOk(o);
      const a = (n: number) => actionAnswer(o.run, n);
      expect(a(1).value).toEqual({ path: '/workspace/gen/rows.py', bytesWritten: Buffer.byteLength(PROGRAM), created: true });
      expect(a(2).value).toMatchObject({ exitCode: 0, output: 'done\n', folder: '/workspace/gen' });
      expect(a(3).value).toEqual({
        path: '/workspace/gen/out.txt',
        startLine: 9,
        endLine: 11,
        totalLines: 20,
        totalBytes: expect.any(Number),
        text: ' 9| row 9: 18\n10| row 10: 20\n11| row 11: 22',
      });
      expect(a(4).value).toMatchObject({ path: '/workspace/gen/rows.py' });
      expect(a(5).value).toMatchObject({ exitCode: 0 });
      expect(a(6).value).toMatchObject({ text: '10| row 10: 30' });
      expect(a(7)).toMatchObject({ isError: true });
      expect(a(7).value).toMatchObject({ code: 'POLICY_VIOLATION' });
      expect(a(8).value['entries']).toEqual([
        { path: 'out.txt', type: 'file', size: expect.any(Number) },
        { path: 'rows.py', type: 'file', size: Buffer.byteLength(PROGRAM) },
      ]);
      expect(allDestroyed(o.events)).toBe(true);
      expect(await leftOf(o.pid)).toEqual([]);
    },
    TEST_TIMEOUT_MS,
  );
});
