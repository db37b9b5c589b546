/**
 * End-to-end: the BUILT plugin (dist/plugin.js) inside the real genaicode 0.9.5
 * ask-question dispatcher, a scripted model, and a real Docker engine.
 *
 * Every scenario is one genaicode child process. They are independent, so all of them are
 * started at once (beforeAll, harness/scenarios.ts) and each test awaits its own scenario and
 * asserts on:
 *  - what the scripted model was sent (system prompt, askQuestion's action list, the
 *    plugin's argument requests, the compact answers as function responses, the summary
 *    request);
 *  - what the engine did, watched with `docker events` filtered on the run's owner label
 *    (genaicode-docker.owner=<host>:<child pid>) and with the docker CLI;
 *  - the files the plugin wrote (command logs).
 *
 * Requires `npx tsc -p tsconfig.build.json` first (the plugin is loaded from dist/).
 */
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { actionListLine } from '../../src/actions/action-spec.js';
import { RUN_COMMAND, START_CONTAINER, STOP_CONTAINER } from '../../src/actions/container-specs.js';
import { docker, dockerOk, inspectContainer, MINIMAL_IMAGE, PYTHON_IMAGE, waitFor } from '../support/engine.js';
import {
  actionAnswer,
  allDestroyed,
  askQuestionCalls,
  callsOfTurn,
  createdIds,
  execCreates,
  execDieOf,
  EventWatcher,
  filesUnder,
  leftOf,
  type DockerEvent,
} from './docker-observe.js';
import {
  askQuestion,
  expectCall,
  functionCall,
  getAskQuestionActionTypes,
  getSystemPrompt,
  promptText,
  type ScriptEntry,
} from './harness/harness.js';
import { END, expectRunOk, pluginCall, setUpScenarios, type Observe, type Observed } from './harness/scenarios.js';
import { E2E_HOST } from './harness/host.js';

const RUN = randomBytes(3).toString('hex');
const SEED_001_PROMPT = 'Summarize concisely, noting errors, failures, and important results (~200 tokens)';
const CHILD_TIMEOUT_MS = 170_000;
const TEST_TIMEOUT_MS = 200_000;

// ---------------------------------------------------------------------------------------
// Script pieces

function start(name: string, image = MINIMAL_IMAGE): ScriptEntry[] {
  return [askQuestion('plugin:startContainer', `Starting ${name}`), pluginCall('startContainer', { image, name })];
}

function run(containerId: string, cmd: string, timeoutMs?: number): ScriptEntry[] {
  return [
    askQuestion('plugin:runCommand', `Running: ${cmd.slice(0, 40)}`),
    pluginCall('runCommand', { containerId, cmd, ...(timeoutMs ? { timeoutMs } : {}) }),
  ];
}

function stop(containerId: string): ScriptEntry[] {
  return [askQuestion('plugin:stopContainer', `Stopping ${containerId}`), pluginCall('stopContainer', { containerId })];
}

// ---------------------------------------------------------------------------------------
// The main scenario's commands

const MAIN = `e2e-main-${RUN}`;
const OK_CMD = 'echo hello-from-e2e; echo second line';
const OK_OUTPUT = 'hello-from-e2e\nsecond line\n';
const FAIL_STDOUT = 'compiling main.c\n';
const FAIL_STDERR = 'fatal error: missing.h: No such file or directory\n';
const FAIL_CMD = `echo "compiling main.c"; echo "fatal error: missing.h: No such file or directory" >&2; exit 2`;
const BIG_FILL_BYTES = 50 * 1024 * 1024;
const BIG_FILL_BEFORE_MIDDLE = 4 * 1024 * 1024;
const BIG_HEAD = 'ERROR: disk check failed on /dev/sda1';
/** Far from both ends of the output: only the log (searched from its start) has it. */
const BIG_MIDDLE = 'panic: runtime error: index out of range [5] with length 3';
const BIG_TAIL = 'FAILED: 3 of 120 tests failed';
const BIG_CMD =
  `echo "${BIG_HEAD}"; yes "filler 0123456789 abcdefghij" | head -c ${BIG_FILL_BEFORE_MIDDLE}; echo; echo "${BIG_MIDDLE}"; ` +
  `yes "filler 0123456789 abcdefghij" | head -c ${BIG_FILL_BYTES - BIG_FILL_BEFORE_MIDDLE}; echo; echo "${BIG_TAIL}" >&2`;
/** stdout: head line, filler, newline, middle line, filler, newline; stderr: the tail line. */
const BIG_TOTAL_BYTES = BIG_HEAD.length + 1 + BIG_FILL_BYTES + 2 + BIG_MIDDLE.length + 1 + BIG_TAIL.length + 1;
const SCRIPTED_SUMMARY = 'Printed 50 MiB of filler. Errors: disk check failed on /dev/sda1; 3 of 120 tests failed.';
const SLOW_CMD = 'echo started-long; sleep 30';

// ---------------------------------------------------------------------------------------
// Scenarios: one genaicode child each, all started together.

const FOREIGN = `foreign-x-${RUN}`;
let foreign: { id: string; startedAt: string; pid: number } | undefined;
let foreignEvents: DockerEvent[] = [];

function startAll(observe: Observe) {
  const main = observe({
    explicitPrompt: 'Check the build in a sandbox.',
    script: [
      ...start(MAIN),
      ...run(MAIN, OK_CMD),
      ...run(MAIN, FAIL_CMD),
      ...run(MAIN, BIG_CMD),
      {
        label: 'summarizeOutput',
        expectFunction: 'summarizeOutput',
        expectRequiredFunction: null,
        expectModelType: E2E_HOST.tiers.lite,
        expectPromptIncludes: SEED_001_PROMPT,
        call: functionCall('summarizeOutput', { summary: SCRIPTED_SUMMARY }),
      },
      ...run(MAIN, SLOW_CMD, 1500),
      ...stop(MAIN),
      END,
    ],
  });

  const NF = `e2e-nf-${RUN}`;
  const notFound = (async () => {
    const id = (await dockerOk(['run', '-d', '--name', FOREIGN, MINIMAL_IMAGE, 'sleep', '600'])).trim();
    const before = await inspectContainer(id);
    if (!before?.State.Running) throw new Error(`the foreign container ${FOREIGN} is not running`);
    foreign = { id, startedAt: before.State.StartedAt, pid: before.State.Pid };
    const watcher = new EventWatcher([`container=${id}`], Date.now());
    try {
      return await observe({
        explicitPrompt: 'Run things in containers.',
        script: [
          ...start(NF),
          ...run('no-such-container-e2e', 'echo should-not-run'),
          ...run(FOREIGN, 'echo pwned > /tmp/pwned'),
          ...run(id, 'echo pwned > /tmp/pwned'),
          ...stop(NF),
          END,
        ],
      });
    } finally {
      await new Promise((r) => setTimeout(r, 300));
      foreignEvents = await watcher.stop();
    }
  })();

  const notAllowed = observe({
    explicitPrompt: 'Use Python.',
    files: {
      '.genaicode-docker.json': JSON.stringify({
        images: { allow: ['genaicode-docker/sandbox-minimal:*'] },
        plugin: { confirmStart: true },
      }),
    },
    script: [...start(`e2e-na-${RUN}`, PYTHON_IMAGE), END],
  });

  const declined = observe({
    explicitPrompt: 'Start a sandbox.',
    confirmations: [{ confirmed: false, promptIncludes: 'Start a Docker container from' }],
    script: [...start(`e2e-decl-${RUN}`), END],
  });

  const ARGS = `e2e-args-${RUN}`;
  const invalidArgs = observe({
    explicitPrompt: 'Run with sloppy arguments.',
    script: [
      ...start(ARGS),
      // Invalid once (no cmd), then valid.
      askQuestion('plugin:runCommand', 'Running retry-ok'),
      pluginCall('runCommand', { containerId: ARGS }),
      expectCall('runCommand', functionCall('runCommand', { containerId: ARGS, cmd: 'echo retry-ok' }), {
        expectPromptIncludes: 'cmd: Required',
        label: 'runCommand retry',
      }),
      // Invalid twice: a wrong argument name, then a blank command.
      askQuestion('plugin:runCommand', 'Running twice-invalid'),
      pluginCall('runCommand', { containerId: ARGS, command: 'echo never' }),
      pluginCall('runCommand', { containerId: ARGS, cmd: '   ' }),
      ...stop(ARGS),
      END,
    ],
  });

  const SUM = `e2e-sum-${RUN}`;
  const summarizerFails = observe({
    explicitPrompt: 'Count to 5000.',
    script: [
      ...start(SUM),
      ...run(SUM, 'seq 1 5000; echo "error: seq-tail-marker" >&2'),
      { label: 'summarizeOutput outage', expectFunction: 'summarizeOutput', error: 'simulated summarizer outage' },
      ...stop(SUM),
      END,
    ],
  });

  const ABORT = `e2e-abort-${RUN}`;
  const aborted = observe(
    {
      explicitPrompt: 'Wait a long time.',
      script: [...start(ABORT), ...run(ABORT, 'sleep 300'), END],
    },
    async (child) => {
      // The runCommand arguments were handed over (4th model call)...
      await child.waitForCalls(4, 120_000);
      // ...and the command is running in the container.
      const top = await waitFor(
        'sleep 300 to run in the container',
        async () => {
          const r = await docker(['top', ABORT]);
          return r.code === 0 && r.stdout.includes('sleep 300') ? r.stdout : undefined;
        },
        60_000,
      );
      const killedAt = Date.now();
      child.kill('SIGTERM');
      return { top, killedAt };
    },
  );

  const LEFT = `e2e-left-${RUN}`;
  const leftRunning = observe({
    explicitPrompt: 'Start and forget.',
    script: [...start(LEFT), END],
  });

  const SHELL = `e2e-shell-${RUN}`;
  const shellState = observe({
    explicitPrompt: 'Work in a subfolder.',
    script: [
      ...start(SHELL),
      ...run(SHELL, 'mkdir -p /tmp/e2e-app && cd /tmp/e2e-app && export E2E_GREETING=kept-over'),
      ...run(SHELL, 'pwd; echo "$E2E_GREETING"'),
      ...stop(SHELL),
      END,
    ],
  });

  return { main, notFound, notAllowed, declined, invalidArgs, summarizerFails, aborted, leftRunning, shellState };
}

const scenario = setUpScenarios({
  childTimeoutMs: CHILD_TIMEOUT_MS,
  start: startAll,
  // The foreign container is this file's own: the plugin must never remove it.
  cleanup: () => docker(['rm', '-f', FOREIGN]),
});

/**
 * Every container of the run was removed by the run itself: its kill/die/destroy began
 * before the child exited (not a later sweep by someone else on this engine) and it was
 * destroyed at most a moment after (an auto-remove racing the forced removal).
 */
function expectRemovedByTheRun(o: Observed): void {
  const ids = createdIds(o.events);
  for (const id of ids) {
    const ends = o.events.filter((e) => e.Actor.ID === id && ['kill', 'die', 'destroy'].includes(e.Action));
    const destroy = ends.find((e) => e.Action === 'destroy');
    expect({ id, began: ends.length > 0, destroyed: destroy !== undefined }).toEqual({ id, began: true, destroyed: true });
    expect(ends[0]!.timeNano / 1e6).toBeLessThanOrEqual(o.exitedAt);
    expect(destroy!.timeNano / 1e6).toBeLessThan(o.exitedAt + 2000);
  }
}

// ---------------------------------------------------------------------------------------

describe(`genaicode-docker in genaicode ${E2E_HOST.version} (scripted model, real engine)`, () => {
  test(
    'main: start, success, failure, 50 MB, timeout, stop; what the model saw, the logs, the cleanup',
    async () => {
      const o = await scenario('main');
      expectRunOk(o);
      const { run } = o;
      const asks = askQuestionCalls(run);
      expect(asks).toHaveLength(7);

      // The system prompt of the very first call has our section with the three actions.
      const system = getSystemPrompt(run.calls[0]!) ?? '';
      expect(system).toContain('## Docker sandbox (genaicode-docker)');
      for (const action of ['plugin:startContainer(', 'plugin:runCommand(', 'plugin:stopContainer(']) expect(system).toContain(action);

      // askQuestion's actionType lists the three actions with their descriptions.
      const actionTypes = getAskQuestionActionTypes(run.calls[0]!);
      expect(actionTypes?.enum).toEqual(expect.arrayContaining(['plugin:startContainer', 'plugin:runCommand', 'plugin:stopContainer']));
      for (const spec of [START_CONTAINER, RUN_COMMAND, STOP_CONTAINER]) {
        expect(actionTypes?.description).toContain(`- plugin:${spec.name}: ${actionListLine(spec)}`);
      }

      // Each action asked the model once for its arguments with ONE definition named as the action.
      const turns = [0, 1, 2, 3, 4, 5].map((n) =>
        callsOfTurn(run, n).map((c) => [c.functionDefNames, c.requiredFunctionName, c.modelType]),
      );
      expect(turns).toEqual([
        [[['startContainer'], null, 'cheap']],
        [[['runCommand'], null, 'cheap']],
        [[['runCommand'], null, 'cheap']],
        [
          [['runCommand'], null, 'cheap'],
          [['summarizeOutput'], null, E2E_HOST.tiers.lite],
        ],
        [[['runCommand'], null, 'cheap']],
        [[['stopContainer'], null, 'cheap']],
      ]);

      // The user was asked before the start.
      const starts = run.report?.confirmations.filter((c) => c.prompt.includes('Start a Docker container')) ?? [];
      expect(starts).toHaveLength(1);
      expect(starts[0]?.prompt).toContain(`from ${MINIMAL_IMAGE} named ${MAIN}`);

      const started = actionAnswer(run, 0);
      expect(started).toMatchObject({ name: 'startContainer', isError: false });
      expect(started.value).toMatchObject({ name: MAIN, status: 'running', image: MINIMAL_IMAGE });
      expect(started.value['id']).toMatch(/^[0-9a-f]{12}$/);
      expect(createdIds(o.events).map((id) => id.slice(0, 12))).toEqual([started.value['id']]);

      // Success: verbatim output.
      const ok = actionAnswer(run, 1);
      expect(ok.name).toBe('runCommand');
      expect(ok.value).toEqual({ exitCode: 0, output: OK_OUTPUT });

      // Failure: exit 2, stderr in the summary.
      const failed = actionAnswer(run, 2);
      expect(failed.value).toMatchObject({ exitCode: 2 });
      expect(failed.value['output']).toEqual(expect.stringContaining(FAIL_STDERR.trim()));
      expect(failed.value['output']).toEqual(expect.stringContaining(FAIL_STDOUT.trim()));

      // 50 MB: the scripted summary, error lines verbatim, and a small answer.
      const big = actionAnswer(run, 3);
      expect(big.value).toMatchObject({ exitCode: 0, summary: SCRIPTED_SUMMARY });
      // No field that states a default or repeats another: the log's path is in the user's line only.
      expect(Object.keys(big.value).sort()).toEqual(['exitCode', 'keyLines', 'summary']);
      expect(big.value['keyLines']).toEqual(expect.arrayContaining([BIG_HEAD, BIG_MIDDLE, BIG_TAIL]));
      expect(big.content.length).toBeLessThan(2400);

      // Timeout: exit 124.
      const slow = actionAnswer(run, 4);
      expect(slow.value).toMatchObject({ exitCode: 124, timedOut: true, output: 'started-long\n' });
      expect(String(slow.value['reason'])).toContain('timed out after 1500 ms');

      const stopped = actionAnswer(run, 5);
      expect(stopped.value).toMatchObject({ status: 'removed', name: MAIN });

      // The summary request: exactly once, for the long output, the summarizer prompt, a capped payload.
      const summaryCalls = run.calls.filter((c) => c.functionDefNames.includes('summarizeOutput'));
      expect(summaryCalls).toHaveLength(1);
      const summaryPrompt = promptText(summaryCalls[0]!);
      expect(summaryPrompt).toContain(SEED_001_PROMPT);
      expect(summaryPrompt).toContain(BIG_CMD);
      expect(summaryPrompt).toContain(BIG_HEAD);
      expect(summaryPrompt).toContain(BIG_TAIL);
      // The middle's error line reaches the summarizer too, marked as coming from the log,
      // which is bigger than the part searched.
      expect(summaryPrompt).toContain(`\n[key lines from the omitted middle of the output, from the full log:]\n${BIG_MIDDLE}\n`);
      expect(summaryPrompt).toMatch(/\[the log's middle \d+ bytes were not searched for errors: only its first and last 8 MiB\]/);
      expect(Buffer.byteLength(summaryPrompt)).toBeLessThan(40 * 1024);

      // Every log holds every byte.
      const logPaths = [ok, failed, big, slow].map((a) => /; log: (.+)$/.exec(a.userText)?.[1] ?? `no log path in ${a.userText}`);
      for (const p of logPaths) {
        expect(path.isAbsolute(p)).toBe(true);
        expect(existsSync(p)).toBe(true);
      }
      const [okLog, failLog, bigLog, slowLog] = logPaths as [string, string, string, string];
      expect(readFileSync(okLog, 'utf-8')).toBe(OK_OUTPUT);
      // stdout and stderr are separate pipes: their relative order is not fixed.
      expect([FAIL_STDOUT + FAIL_STDERR, FAIL_STDERR + FAIL_STDOUT]).toContain(readFileSync(failLog, 'utf-8'));
      expect(statSync(bigLog).size).toBe(BIG_TOTAL_BYTES);
      expect(readFileSync(slowLog, 'utf-8')).toBe('started-long\n');
      expect(logPaths.every((p) => p.startsWith(o.project.logsDir + path.sep))).toBe(true);

      // Nothing of the run's session is left, and genaicode ended normally.
      const session = path.basename(path.dirname(okLog));
      const leftInSession = await dockerOk([
        'ps',
        '-a',
        '-q',
        '--filter',
        'label=genaicode-docker.managed=true',
        '--filter',
        `label=genaicode-docker.session=${session}`,
      ]);
      expect(leftInSession.trim()).toBe('');
      expect(await leftOf(o.pid)).toEqual([]);
      expectRemovedByTheRun(o);
      expect(await inspectContainer(MAIN)).toBeUndefined();
      expect(run.exitCode).toBe(0);
    },
    TEST_TIMEOUT_MS,
  );

  test(
    'an unknown containerId: CONTAINER_NOT_FOUND, and no exec happened',
    async () => {
      const o = await scenario('notFound');
      expectRunOk(o);
      const answer = actionAnswer(o.run, 1);
      expect(answer).toMatchObject({ name: 'runCommand', isError: true });
      expect(answer.value).toEqual(expect.objectContaining({ error: expect.any(String), code: 'CONTAINER_NOT_FOUND' }));
      expect(String(answer.value['error'])).toContain('no-such-container-e2e');
      // The run had a live container to run things in: still, not one exec reached the engine.
      expect(createdIds(o.events)).toHaveLength(1);
      expect(execCreates(o.events).map((e) => e.Action)).toEqual([]);
      expect(filesUnder(o.project.logsDir, '.log')).toEqual([]);
      expect(await leftOf(o.pid)).toEqual([]);
      expectRemovedByTheRun(o);
    },
    TEST_TIMEOUT_MS,
  );

  test(
    'a container the plugin did not start (by name and by id): CONTAINER_NOT_FOUND, and it is not touched',
    async () => {
      const o = await scenario('notFound');
      expectRunOk(o);
      if (!foreign) throw new Error('the foreign container was not created');
      for (const n of [2, 3]) {
        const answer = actionAnswer(o.run, n);
        expect(answer).toMatchObject({ name: 'runCommand', isError: true });
        expect(answer.value).toEqual(expect.objectContaining({ error: expect.any(String), code: 'CONTAINER_NOT_FOUND' }));
      }
      // No exec, no stop, no kill, nothing at all while genaicode ran (the plugin also swept at its start).
      expect(foreignEvents.map((e) => e.Action)).toEqual([]);
      const after = await inspectContainer(foreign.id);
      expect(after?.State.Running).toBe(true);
      expect(after?.State.StartedAt).toBe(foreign.startedAt);
      expect(after?.State.Pid).toBe(foreign.pid);
      const pwned = await docker(['exec', foreign.id, 'test', '-e', '/tmp/pwned']);
      expect(pwned.code).toBe(1);
    },
    TEST_TIMEOUT_MS,
  );

  test(
    'an image not on the allowlist: IMAGE_NOT_ALLOWED, the user is not asked, nothing is created',
    async () => {
      const o = await scenario('notAllowed');
      expectRunOk(o);
      // The project's .genaicode-docker.json was read: the system prompt shows its allowlist.
      expect(getSystemPrompt(o.run.calls[0]!)).toContain('allowed images genaicode-docker/sandbox-minimal:*');
      const answer = actionAnswer(o.run, 0);
      expect(answer).toMatchObject({ name: 'startContainer', isError: true });
      expect(answer.value).toEqual(expect.objectContaining({ error: expect.any(String), code: 'IMAGE_NOT_ALLOWED' }));
      expect(String(answer.value['error'])).toContain(PYTHON_IMAGE);
      expect(o.run.report?.confirmations.map((c) => c.prompt)).toEqual(['Do you want to end the conversation?']);
      expect(createdIds(o.events)).toEqual([]);
    },
    TEST_TIMEOUT_MS,
  );

  test(
    'a rejected confirmation: USER_DECLINED, and no container is created',
    async () => {
      const o = await scenario('declined');
      expectRunOk(o);
      const asked = o.run.report?.confirmations ?? [];
      expect(asked.map((c) => [c.prompt.startsWith(`Start a Docker container from ${MINIMAL_IMAGE}`), c.response.confirmed])).toEqual([
        [true, false],
        [false, true], // 'Do you want to end the conversation?'
      ]);
      const answer = actionAnswer(o.run, 0);
      expect(answer).toMatchObject({ name: 'startContainer', isError: true });
      expect(answer.value).toEqual(expect.objectContaining({ error: expect.any(String), code: 'USER_DECLINED' }));
      expect(createdIds(o.events)).toEqual([]);
      expect(await inspectContainer(`e2e-decl-${RUN}`)).toBeUndefined();
    },
    TEST_TIMEOUT_MS,
  );

  test(
    'the kept shell: cd and export in one runCommand reach the next, and the answer names the new folder',
    async () => {
      const o = await scenario('shellState');
      expectRunOk(o);
      const cd = actionAnswer(o.run, 1);
      expect(cd).toMatchObject({ name: 'runCommand', isError: false });
      expect(cd.value).toEqual({ exitCode: 0, output: '', folder: '/tmp/e2e-app' });
      const next = actionAnswer(o.run, 2);
      expect(next.value).toEqual({ exitCode: 0, output: '/tmp/e2e-app\nkept-over\n' });
      // The system prompt tells the model that state carries over.
      expect(getSystemPrompt(o.run.calls[0]!)).toContain('cd and export carry over');
    },
    TEST_TIMEOUT_MS,
  );

  test(
    'invalid arguments: one retry shows the model the validation error, then a valid call runs',
    async () => {
      const o = await scenario('invalidArgs');
      expectRunOk(o);
      const requests = callsOfTurn(o.run, 1);
      expect(requests.map((c) => c.functionDefNames)).toEqual([['runCommand'], ['runCommand']]);
      const retryPrompt = requests[1]!.prompt;
      const last = retryPrompt[retryPrompt.length - 1]!;
      expect(last.type).toBe('user');
      expect(last.text).toContain('The arguments were invalid: cmd: Required');
      expect(JSON.parse(last.functionResponses?.[0]?.content ?? '{}')).toMatchObject({ code: 'INVALID_ARGUMENT' });
      expect(retryPrompt[retryPrompt.length - 2]).toMatchObject({
        type: 'assistant',
        functionCalls: [{ name: 'runCommand', args: { containerId: `e2e-args-${RUN}` } }],
      });
      const answer = actionAnswer(o.run, 1);
      expect(answer.isError).toBe(false);
      expect(answer.value).toEqual({ exitCode: 0, output: 'retry-ok\n' });
    },
    TEST_TIMEOUT_MS,
  );

  test(
    'invalid arguments twice: an INVALID_ARGUMENT answer, no third request, no exec',
    async () => {
      const o = await scenario('invalidArgs');
      expectRunOk(o);
      expect(callsOfTurn(o.run, 2).map((c) => c.functionDefNames)).toEqual([['runCommand'], ['runCommand']]);
      const answer = actionAnswer(o.run, 2);
      expect(answer).toMatchObject({ name: 'runCommand', isError: true });
      expect(answer.value).toEqual(expect.objectContaining({ code: 'INVALID_ARGUMENT', error: expect.stringContaining('cmd') }));
      // Only the retried command reached the engine: one exec, the container's kept shell, and one command's log.
      expect(execCreates(o.events)).toHaveLength(1);
      expect(execCreates(o.events)[0]?.Action).toContain(': kept-shell');
      const metas = filesUnder(o.project.logsDir, '.json').map((p) => JSON.parse(readFileSync(p, 'utf-8')) as Record<string, unknown>);
      expect(metas.map((m) => m['command'])).toEqual(['echo retry-ok']);
      expect(await leftOf(o.pid)).toEqual([]);
      expectRemovedByTheRun(o);
    },
    TEST_TIMEOUT_MS,
  );

  test(
    'a failing summarizer: an extractive summary, and the result still reaches the model',
    async () => {
      const o = await scenario('summarizerFails');
      expectRunOk(o);
      const summaryCalls = o.run.calls.filter((c) => c.functionDefNames.includes('summarizeOutput'));
      expect(summaryCalls.map((c) => [c.error, c.simulated])).toEqual([['simulated summarizer outage', true]]);
      const answer = actionAnswer(o.run, 1);
      expect(answer).toMatchObject({ name: 'runCommand', isError: false });
      expect(answer.value).toMatchObject({ exitCode: 0 });
      expect(answer.value['summary']).toEqual(expect.stringContaining('5000'));
      expect(answer.value['keyLines']).toEqual(expect.arrayContaining(['error: seq-tail-marker']));
      // The conversation went on: the stop happened.
      expect(actionAnswer(o.run, 2).value).toMatchObject({ status: 'removed' });
      expect(await leftOf(o.pid)).toEqual([]);
      expectRemovedByTheRun(o);
    },
    TEST_TIMEOUT_MS,
  );

  test(
    'SIGTERM during a long command: the command is killed in the container, then no container is left',
    async () => {
      const o = await scenario('aborted');
      const { run } = o;
      expect(String(o.extra['top'])).toContain('sleep 300');
      expect({ exitCode: run.exitCode, signal: run.report?.signal, timedOut: run.timedOut }).toEqual({
        exitCode: 143,
        signal: 'SIGTERM',
        timedOut: false,
      });
      // The loop stopped without asking the model again.
      expect(run.calls).toHaveLength(4);
      expect(run.unusedScriptEntries).toBe(1);

      // `sleep 300` ran in the kept shell; the exec that killed its tree ended (found it all
      // gone) before anything happened to the container itself.
      const killExec = execCreates(o.events).find((e) => e.Action.includes('GENAICODE_DOCKER_EXEC=') && !e.Action.includes(': kept-shell'));
      expect(killExec).toBeDefined();
      const execDie = execDieOf(o.events, killExec!);
      expect(execDie?.Actor.Attributes['exitCode']).toBe('0');
      const containerEnd = o.events.find((e) => ['kill', 'die', 'stop', 'destroy'].includes(e.Action));
      expect(containerEnd).toBeDefined();
      expect(execDie!.timeNano).toBeLessThan(containerEnd!.timeNano);
      // And well before the 60 s default timeout.
      expect(execDie!.time * 1000).toBeLessThan(Number(o.extra['killedAt']) + 20_000);

      // The command's record: canceled, and the kill was verified complete.
      const metas = filesUnder(o.project.logsDir, '.json').map((p) => JSON.parse(readFileSync(p, 'utf-8')) as Record<string, unknown>);
      expect(metas).toHaveLength(1);
      expect(metas[0]).toMatchObject({
        command: 'sleep 300',
        exitCode: 137,
        canceled: true,
        reason: 'canceled; its process tree was killed',
      });
      expect(run.report?.messages.map((m) => m.content)).toContainEqual(expect.stringContaining('-> exit 137 (canceled)'));

      expect(allDestroyed(o.events)).toBe(true);
      expect(await leftOf(o.pid)).toEqual([]);
      expectRemovedByTheRun(o);
    },
    TEST_TIMEOUT_MS,
  );

  test(
    'genaicode ends with a container still running: it is removed when the process exits',
    async () => {
      const o = await scenario('leftRunning');
      expectRunOk(o);
      expect(actionAnswer(o.run, 0).value).toMatchObject({ status: 'running', name: `e2e-left-${RUN}` });
      // Never stopped through the plugin: the container lived past the last model call (the
      // record file's last write)...
      expect(createdIds(o.events)).toHaveLength(1);
      const firstEnd = o.events.find((e) => ['kill', 'die', 'destroy'].includes(e.Action));
      expect(firstEnd).toBeDefined();
      expect(firstEnd!.timeNano / 1e6).toBeGreaterThanOrEqual(statSync(o.project.recordPath).mtimeMs);
      // ...and was removed on the way out, before the process was gone.
      expectRemovedByTheRun(o);
      expect(await leftOf(o.pid)).toEqual([]);
      expect(await inspectContainer(`e2e-left-${RUN}`)).toBeUndefined();
    },
    TEST_TIMEOUT_MS,
  );
});
