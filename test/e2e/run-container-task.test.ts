/**
 * End-to-end: `plugin:runContainerTask` of the BUILT plugin (dist/plugin.js) inside the
 * real genaicode 0.9.5 ask-question dispatcher, a scripted model, and a real Docker engine.
 *
 * The main model picks plugin:runContainerTask, the plugin asks it for the arguments (one
 * definition, `runContainerTask`), the user confirms the start, and then the inner loop
 * asks the (scripted) cheap model for one step at a time with exactly three functions
 * (nextCommand / taskComplete / taskFailed), runs each command in the container, and asks
 * the default model for the final summary (taskSummary). What each of those calls was
 * shown is asserted against the inner-loop and summary prompts; the answer the main model reads
 * is the function response in the next askQuestion call's prompt.
 *
 * Scenarios (one genaicode child each, all started together in beforeAll, harness/scenarios.ts):
 *  - main:       write a file, a failing command (exit 2), recovery (42), complete, summary;
 *  - aborted:    `sleep 300` as a step, SIGTERM to the child while it runs;
 *  - declined:   the user rejects the start: USER_DECLINED, no container;
 *  - notAllowed: an image outside the project's allowlist: IMAGE_NOT_ALLOWED, nobody asked.
 *
 * Requires `npx tsc -p tsconfig.build.json` first (the plugin is loaded from dist/).
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { docker, dockerOk, MINIMAL_IMAGE, PYTHON_IMAGE, waitFor } from '../support/engine.js';
import {
  actionAnswer,
  allDestroyed,
  askQuestionCalls,
  callsOfTurn,
  createdIds,
  execCreates,
  execDieOf,
  leftOf,
  ownerOf,
} from './docker-observe.js';
import {
  askQuestion,
  functionCall,
  getAskQuestionActionTypes,
  getSystemPrompt,
  promptText,
  type RecordedCall,
  type ScriptedCall,
  type ScriptEntry,
} from './harness/harness.js';
import { END, expectRunOk, pluginCall, setUpScenarios, type Observe } from './harness/scenarios.js';
import { E2E_HOST } from './harness/host.js';

const CHILD_TIMEOUT_MS = 150_000;
const TEST_TIMEOUT_MS = 180_000;

// The inner loop's prompt.
const SEED_STEP_SYSTEM = 'You are an expert system operator inside a Docker container';
const SEED_STEP_INSTRUCTION = 'determine the single next shell command to run';
const SEED_STEP_HEADINGS = ['Overall Task:', 'Command History (stdout/stderr):', 'Next command:'];
// Section 6: the final summary's prompt, on "a more capable model".
const SEED_SUMMARY_LINES = [
  'Based on the following task description and the full command log, provide a concise summary of the outcome.',
  'Highlight key results, successes, and any errors encountered.',
  'Task Description:',
  'Full Command Log:',
  'Summary:',
];
const STEP_FUNCTIONS = ['nextCommand', 'taskComplete', 'taskFailed'];

// ---------------------------------------------------------------------------------------
// The main scenario

const TASK = 'Write answer.py that prints the product of 6 and 7 with Python, run it with python3 and check that it prints 42.';
const CMD_WRITE = "printf 'print(6*7)\\n' > answer.py";
const CMD_FAIL = 'python3 missing.py';
const CMD_RUN = 'python3 answer.py';
const PY_ERROR = "can't open file";
const MODEL_SUMMARY = 'answer.py prints 42; a first attempt ran the missing missing.py and exited 2, then answer.py was run successfully.';
const COMPLETE_NOTE = 'answer.py printed 42';

/** One inner step: the three step functions offered, the host's lite tier (0.9.5: cheap), no required name. */
function step(label: string, call: ScriptedCall, expectPromptIncludes: string[] = []): ScriptEntry {
  return {
    label,
    expectFunction: STEP_FUNCTIONS,
    expectRequiredFunction: null,
    expectModelType: E2E_HOST.tiers.lite,
    ...(expectPromptIncludes.length ? { expectPromptIncludes } : {}),
    call,
  };
}

// ---------------------------------------------------------------------------------------
// Scenarios

function startAll(observe: Observe) {
  const main = observe({
    explicitPrompt: 'Check in a sandbox that Python computes 6*7 correctly.',
    // No network needed: keep the task container off the bridge (task.network defaults to bridge).
    files: { '.genaicode-docker.json': JSON.stringify({ task: { network: 'none' } }) },
    script: [
      askQuestion('plugin:runContainerTask', 'Running the check as a container task'),
      pluginCall('runContainerTask', { image: PYTHON_IMAGE, taskDescription: TASK }),
      step('step 1', functionCall('nextCommand', { command: CMD_WRITE, reasoning: 'write the script first' })),
      step('step 2', functionCall('nextCommand', { command: CMD_FAIL, reasoning: 'run it (wrong file name)' }), [CMD_WRITE]),
      step('step 3', functionCall('nextCommand', { command: CMD_RUN, reasoning: 'run the right file' }), [CMD_FAIL, PY_ERROR]),
      step('step 4', functionCall('taskComplete', { summary: COMPLETE_NOTE }), [CMD_RUN, '42']),
      {
        label: 'task summary',
        expectFunction: 'taskSummary',
        expectRequiredFunction: null,
        expectModelType: 'default',
        call: functionCall('taskSummary', { summary: MODEL_SUMMARY }),
      },
      END,
    ],
  });

  const aborted = observe(
    {
      explicitPrompt: 'Wait a long time in a sandbox.',
      files: { '.genaicode-docker.json': JSON.stringify({ task: { network: 'none' } }) },
      script: [
        askQuestion('plugin:runContainerTask', 'Waiting in a container task'),
        pluginCall('runContainerTask', {
          image: MINIMAL_IMAGE,
          taskDescription: 'Sleep for five minutes, then report that the wait is over.',
        }),
        step('sleep step', functionCall('nextCommand', { command: 'sleep 300' })),
        // Never reached: after the abort, neither the loop nor genaicode asks a model again.
        step('after the abort', functionCall('taskFailed', { reason: 'should not be asked' })),
        END,
      ],
    },
    async (child, pid) => {
      await child.waitForCalls(3, 90_000);
      // The step's command is running in the task container: its host pid from `docker top`.
      const found = await waitFor(
        'sleep 300 to run in the task container',
        async () => {
          const ids = (
            await dockerOk([
              'ps',
              '-q',
              '--filter',
              'label=genaicode-docker.managed=true',
              '--filter',
              `label=genaicode-docker.owner=${ownerOf(pid)}`,
            ])
          )
            .split('\n')
            .map((s) => s.trim())
            .filter(Boolean);
          for (const id of ids) {
            const top = await docker(['top', id, '-o', 'pid,args']);
            const line = top.stdout.split('\n').find((l) => /\bsleep 300\b/.test(l));
            if (top.code === 0 && line) return { container: id, sleepPid: Number(line.trim().split(/\s+/)[0]), top: top.stdout };
          }
          return undefined;
        },
        60_000,
      );
      const killedAt = Date.now();
      child.kill('SIGTERM');
      return { ...found, killedAt };
    },
  );

  const declined = observe({
    explicitPrompt: 'Run a task in a sandbox.',
    confirmations: [{ confirmed: false, promptIncludes: 'Start a Docker container from' }],
    script: [
      askQuestion('plugin:runContainerTask', 'Running a task'),
      pluginCall('runContainerTask', { image: MINIMAL_IMAGE, taskDescription: 'List the files of the working directory and report them.' }),
      END,
    ],
  });

  const notAllowed = observe({
    explicitPrompt: 'Use Python in a sandbox.',
    files: { '.genaicode-docker.json': JSON.stringify({ images: { allow: ['genaicode-docker/sandbox-minimal:*'] } }) },
    script: [
      askQuestion('plugin:runContainerTask', 'Running a Python task'),
      pluginCall('runContainerTask', { image: PYTHON_IMAGE, taskDescription: 'Print the Python version and report it.' }),
      END,
    ],
  });

  return { main, aborted, declined, notAllowed };
}

const scenario = setUpScenarios({ childTimeoutMs: CHILD_TIMEOUT_MS, start: startAll });

/** 'askQuestion' for genaicode's forced turn call, else the names of the functions offered. */
function callKind(call: RecordedCall): string {
  return call.requiredFunctionName === E2E_HOST.dispatcher ? 'askQuestion' : call.functionDefNames.join(',');
}

/** The prompt's user text (the inner calls are standalone: one system item, one user item). */
function userText(call: RecordedCall): string {
  return call.prompt
    .filter((p) => p.type === 'user')
    .map((p) => p.text ?? '')
    .join('\n');
}

/** The text after the LAST occurrence of `command` (the newest history entry is the last one). */
function afterLast(text: string, command: string): string {
  const i = text.lastIndexOf(command);
  if (i < 0) throw new Error(`${JSON.stringify(command)} is not in the prompt:\n${text}`);
  return text.slice(i + command.length);
}

/** "exit 2", "exit code 2", "exit: 2", ... */
function exitMark(code: number): RegExp {
  return new RegExp(`exit(?:ed)?(?: code| status)?[:= ]*${code}\\b`, 'i');
}

// ---------------------------------------------------------------------------------------

describe(`plugin:runContainerTask in genaicode ${E2E_HOST.version} (scripted model, real engine)`, () => {
  test(
    'main: write, fail (exit 2), recover (42), complete; what each call was shown, the answer, the log, the cleanup',
    async () => {
      const o = await scenario('main');
      expectRunOk(o);
      const { run } = o;
      const asks = askQuestionCalls(run);
      expect(asks).toHaveLength(2);

      // The system prompt of the very first call carries the runContainerTask guidance.
      const system = getSystemPrompt(run.calls[0]!) ?? '';
      expect(system).toContain('## Docker sandbox (genaicode-docker)');
      expect(system).toContain('plugin:runContainerTask');
      expect(system).toMatch(/plugin:runContainerTask\(\{ image, taskDescription/);
      const actionTypes = getAskQuestionActionTypes(run.calls[0]!);
      expect(actionTypes?.enum).toContain('plugin:runContainerTask');
      expect(actionTypes?.description).toContain('- plugin:runContainerTask: ');

      // The turn's own model calls: the arguments, four steps, the summary.
      const turn = callsOfTurn(run, 0);
      expect(turn.map((c) => [c.functionDefNames, c.requiredFunctionName, c.modelType])).toEqual([
        [['runContainerTask'], null, 'cheap'],
        [STEP_FUNCTIONS, null, E2E_HOST.tiers.lite],
        [STEP_FUNCTIONS, null, E2E_HOST.tiers.lite],
        [STEP_FUNCTIONS, null, E2E_HOST.tiers.lite],
        [STEP_FUNCTIONS, null, E2E_HOST.tiers.lite],
        [['taskSummary'], null, 'default'],
      ]);

      // The user confirmed the start of the task container.
      const starts = run.report?.confirmations.filter((c) => c.prompt.startsWith('Start a Docker container')) ?? [];
      expect(starts).toHaveLength(1);
      expect(starts[0]?.prompt).toContain(`from ${PYTHON_IMAGE}`);
      expect(starts[0]?.response.confirmed).toBe(true);

      // Each step: a standalone prompt (system + user), the inner-loop prompt's text, the task.
      const steps = turn.slice(1, 5);
      for (const [i, call] of steps.entries()) {
        expect(call.prompt.map((p) => p.type)).toEqual(['systemPrompt', 'user']);
        expect(getSystemPrompt(call)).toContain(SEED_STEP_SYSTEM);
        const text = userText(call);
        expect(text).toContain(SEED_STEP_INSTRUCTION);
        for (const heading of SEED_STEP_HEADINGS) expect(text).toContain(heading);
        expect(text).toContain(TASK);
        // Not the main conversation: neither genaicode's system prompt nor the user's request.
        expect(promptText(call)).not.toContain('## Docker sandbox (genaicode-docker)');
        expect(promptText(call)).not.toContain('Check in a sandbox that Python computes');
        if (i === 0) expect(text).not.toContain('printf');
      }
      const [, s2, s3, s4] = steps.map(userText) as [string, string, string, string];
      // Step 2: the first command, no output, exit 0.
      expect(afterLast(s2, CMD_WRITE)).toMatch(exitMark(0));
      // Step 3: the failing command with Python's error and exit 2.
      const failed = afterLast(s3, CMD_FAIL);
      expect(failed).toContain(PY_ERROR);
      expect(failed).toContain('missing.py');
      expect(failed).toMatch(exitMark(2));
      expect(s3).toContain(CMD_WRITE);
      // Step 4: the recovery printed 42 with exit 0; the failure is still in view.
      const recovered = afterLast(s4, CMD_RUN);
      expect(recovered).toMatch(/(^|\n)42\n/);
      expect(recovered).toMatch(exitMark(0));
      expect(afterLast(s4, CMD_FAIL)).toMatch(exitMark(2));

      // The summary request: the summary prompt on the default tier, with the whole log.
      const summaryCall = turn[5]!;
      const summaryText = userText(summaryCall);
      for (const line of SEED_SUMMARY_LINES) expect(summaryText).toContain(line);
      expect(summaryText).toContain(TASK);
      for (const needle of [CMD_WRITE, CMD_FAIL, CMD_RUN, PY_ERROR, '42']) expect(summaryText).toContain(needle);
      expect(summaryText.indexOf('Task Description:')).toBeLessThan(summaryText.indexOf('Full Command Log:'));
      expect(summaryText.indexOf('Full Command Log:')).toBeLessThan(
        summaryText.indexOf('Summary:', summaryText.indexOf('Full Command Log:')),
      );

      // The answer the main model read in its next askQuestion call.
      const answer = actionAnswer(run, 0);
      expect(answer).toMatchObject({ name: 'runContainerTask', isError: false });
      expect(answer.value).toMatchObject({ success: true, commandsRun: 3 });
      expect(String(answer.value['summary'])).toContain(MODEL_SUMMARY);
      const logPath = String(answer.value['logPath']);
      expect(path.isAbsolute(logPath)).toBe(true);
      expect(logPath.startsWith(o.project.logsDir + path.sep)).toBe(true);
      expect(existsSync(logPath)).toBe(true);

      // The task log: every command, its output, the summary.
      const log = readFileSync(logPath, 'utf-8');
      expect(log).toContain(TASK);
      for (const cmd of [CMD_WRITE, CMD_FAIL, CMD_RUN]) expect(log).toContain(cmd);
      expect(log).toContain(PY_ERROR);
      expect(log).toMatch(/(^|\n)42\n/);
      expect(log).toContain(MODEL_SUMMARY);
      expect(log.indexOf(CMD_WRITE)).toBeLessThan(log.indexOf(CMD_FAIL));
      expect(log.indexOf(CMD_FAIL)).toBeLessThan(log.indexOf(CMD_RUN));

      // The engine: one container, the three commands run in its one kept shell (no exec of
      // their own), and it is gone.
      expect(createdIds(o.events)).toHaveLength(1);
      const execs = execCreates(o.events).map((e) => e.Action);
      expect(execs.filter((a) => a.includes(': kept-shell'))).toHaveLength(1);
      for (const needle of ['print(6*7)', CMD_FAIL, CMD_RUN]) expect(execs.some((a) => a.includes(needle))).toBe(false);
      expect(allDestroyed(o.events)).toBe(true);
      expect(await leftOf(o.pid)).toEqual([]);
    },
    TEST_TIMEOUT_MS,
  );

  test(
    'SIGTERM during a step: the command and the container are gone, the task ends as aborted',
    async () => {
      const o = await scenario('aborted');
      const { run } = o;
      expect(String(o.extra['top'])).toContain('sleep 300');
      expect({ exitCode: run.exitCode, signal: run.report?.signal, timedOut: run.timedOut }).toEqual({
        exitCode: 143,
        signal: 'SIGTERM',
        timedOut: false,
      });
      // No model call after the abort: not the next step, not the summary, not genaicode.
      expect(run.calls.map(callKind)).toEqual(['askQuestion', 'runContainerTask', STEP_FUNCTIONS.join(',')]);
      expect(run.unusedScriptEntries).toBe(2);

      // The sleep ran in the kept shell: the exec that killed its tree ended before the
      // container went away, and long before 300 s.
      const killExec = execCreates(o.events).find((e) => e.Action.includes('GENAICODE_DOCKER_EXEC=') && !e.Action.includes(': kept-shell'));
      expect(killExec).toBeDefined();
      const execDie = execDieOf(o.events, killExec!);
      expect(execDie).toBeDefined();
      expect(execDie!.time * 1000).toBeLessThan(Number(o.extra['killedAt']) + 20_000);

      // The sleep process itself is gone from the host.
      const sleepPid = Number(o.extra['sleepPid']);
      expect(sleepPid).toBeGreaterThan(0);
      const cmdline = existsSync(`/proc/${sleepPid}/cmdline`) ? readFileSync(`/proc/${sleepPid}/cmdline`, 'utf-8').replace(/\0/g, ' ') : '';
      expect(cmdline).not.toMatch(/sleep 300/);

      // No container of the run is left.
      expect(createdIds(o.events)).toHaveLength(1);
      expect(allDestroyed(o.events)).toBe(true);
      expect(await leftOf(o.pid)).toEqual([]);

      // The child could still report: the handler's answer was "not successful", and its
      // summary (in the task log; the function response is in no later model prompt,
      // since genaicode stops asking once aborted) starts with 'aborted'.
      const contents = run.report?.messages.map((m) => m.content) ?? [];
      const done = contents.find((c) => /^runContainerTask (succeeded|did not succeed)/.test(c));
      expect(done).toMatch(/^runContainerTask did not succeed after 1 commands?; log: /);
      const logPath = done!.replace(/^.*; log: /, '').trim();
      expect(existsSync(logPath)).toBe(true);
      const log = readFileSync(logPath, 'utf-8');
      expect(log).toContain('sleep 300');
      const summary = /# Summary[^\n]*\n([\s\S]*)$/.exec(log)?.[1] ?? '';
      expect(summary).toMatch(/^aborted/);
    },
    TEST_TIMEOUT_MS,
  );

  test(
    'a rejected confirmation: USER_DECLINED, no container, no inner step',
    async () => {
      const o = await scenario('declined');
      expectRunOk(o);
      const asked = o.run.report?.confirmations ?? [];
      expect(asked.map((c) => [c.prompt.startsWith(`Start a Docker container from ${MINIMAL_IMAGE}`), c.response.confirmed])).toEqual([
        [true, false],
        [false, true], // 'Do you want to end the conversation?'
      ]);
      const answer = actionAnswer(o.run, 0);
      expect(answer).toMatchObject({ name: 'runContainerTask', isError: true });
      expect(answer.value).toEqual(expect.objectContaining({ error: expect.any(String), code: 'USER_DECLINED' }));
      expect(o.run.calls.map(callKind)).toEqual(['askQuestion', 'runContainerTask', 'askQuestion']);
      expect(createdIds(o.events)).toEqual([]);
      expect(await leftOf(o.pid)).toEqual([]);
    },
    TEST_TIMEOUT_MS,
  );

  test(
    'an image not on the allowlist: IMAGE_NOT_ALLOWED, the user is not asked, nothing is created',
    async () => {
      const o = await scenario('notAllowed');
      expectRunOk(o);
      const answer = actionAnswer(o.run, 0);
      expect(answer).toMatchObject({ name: 'runContainerTask', isError: true });
      expect(answer.value).toEqual(expect.objectContaining({ error: expect.any(String), code: 'IMAGE_NOT_ALLOWED' }));
      expect(String(answer.value['error'])).toContain(PYTHON_IMAGE);
      expect(o.run.report?.confirmations.map((c) => c.prompt)).toEqual(['Do you want to end the conversation?']);
      expect(o.run.calls.map(callKind)).toEqual(['askQuestion', 'runContainerTask', 'askQuestion']);
      expect(createdIds(o.events)).toEqual([]);
      expect(await leftOf(o.pid)).toEqual([]);
    },
    TEST_TIMEOUT_MS,
  );
});
