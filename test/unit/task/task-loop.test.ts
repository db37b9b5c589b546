/**
 * runTask, the runContainerTask inner loop, without an engine: commands go to a fake
 * CommandRunner that answers with ExecResults built here (and writes each command's full
 * log, as a Sandbox does), the model is scripted per tier, the task log is a real LogStore
 * file. The wall clock is jest's fake `performance.now`, moved by the runner: a command
 * "takes" exactly as long as the test says.
 */
import { jest } from '@jest/globals';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { LogStore } from '../../../src/capture/log-store.js';
import { SandboxError } from '../../../src/errors.js';
import type { ExecOptions, ExecResult } from '../../../src/commands/exec-types.js';
import { HISTORY_LIMITS } from '../../../src/task/task-history.js';
import {
  runTask,
  STEP_SYSTEM_PROMPT,
  type CommandRunner,
  type RunTaskOptions,
  type TaskLimits,
  type TaskProgress,
} from '../../../src/task/task-loop.js';
import type { FunctionCall, ModelRequest, TaskModel } from '../../../src/task/task-model.js';
import { removeTempDirs, tempDir } from '../helpers.js';

afterEach(() => {
  jest.useRealTimers();
  removeTempDirs();
});

// ---------------------------------------------------------------------------------------
// The fakes

type Tier = 'step' | 'summary';
type Answer = FunctionCall[] | Error;

/** Answers from one queue per tier (then `otherwise`), and records every request. */
class ScriptedTaskModel implements TaskModel {
  readonly calls: Array<{ tier: Tier } & ModelRequest> = [];
  private readonly queues: Record<Tier, Answer[]>;

  constructor(
    steps: Answer[],
    summaries: Answer[] = [summary('scripted summary')],
    private readonly otherwise?: (tier: Tier) => Answer,
  ) {
    this.queues = { step: [...steps], summary: [...summaries] };
  }

  async call(tier: Tier, request: ModelRequest): Promise<FunctionCall[]> {
    this.calls.push({ tier, ...request });
    const answer = this.queues[tier].shift() ?? this.otherwise?.(tier);
    if (answer === undefined) throw new Error(`script exhausted: no ${tier} answer left`);
    if (answer instanceof Error) throw answer;
    return answer;
  }

  tiers(): Tier[] {
    return this.calls.map((c) => c.tier);
  }

  /** The prompt of the n-th step call (1-based). */
  stepPrompt(n: number): string {
    const c = this.calls.filter((x) => x.tier === 'step')[n - 1];
    if (!c) throw new Error(`there was no step call ${n}`);
    return c.prompt;
  }
}

const cmd = (command: string, reasoning?: string): FunctionCall[] => [
  { name: 'nextCommand', args: { command, ...(reasoning ? { reasoning } : {}) } },
];
const complete = (text?: string): FunctionCall[] => [{ name: 'taskComplete', args: text ? { summary: text } : {} }];
const failed = (reason: string): FunctionCall[] => [{ name: 'taskFailed', args: { reason } }];
const summary = (text: string): FunctionCall[] => [{ name: 'taskSummary', args: { summary: text } }];

/** What one command does: its output (the full log; `stdout` is what the result keeps), exit, duration. */
interface Outcome {
  output?: string;
  stdout?: string;
  stderr?: string;
  exitCode?: number;
  durationMs?: number;
  over?: Partial<ExecResult>;
}

/** A CommandRunner whose commands end as `script` says, each "taking" its duration on the fake clock. */
class FakeRunner implements CommandRunner {
  readonly calls: Array<{ command: string; options: ExecOptions }> = [];

  constructor(
    private readonly logDir: string,
    private readonly script: (command: string, n: number) => Outcome | Error = (command) => ({ output: `out of ${command}\n` }),
  ) {}

  async exec(command: string, options: ExecOptions): Promise<ExecResult> {
    this.calls.push({ command, options });
    const o = this.script(command, this.calls.length);
    if (o instanceof Error) throw o;
    const durationMs = o.durationMs ?? 5;
    jest.advanceTimersByTime(durationMs); // run() fakes the clock: the command takes exactly this long
    const stdout = o.stdout ?? o.output ?? '';
    const stderr = o.stderr ?? '';
    const logPath = join(this.logDir, `${String(this.calls.length).padStart(4, '0')}.log`);
    writeFileSync(logPath, o.output ?? `${stdout}${stderr}`);
    return {
      command,
      exitCode: o.exitCode ?? 0,
      stdout,
      stderr,
      truncated: o.output !== undefined && o.output !== stdout,
      timedOut: false,
      canceled: false,
      oomKilled: false,
      pidsLimitHit: false,
      diskLimitHit: false,
      bytes: { stdout: Buffer.byteLength(stdout), stderr: Buffer.byteLength(stderr) },
      lines: { stdout: stdout.split('\n').length - 1, stderr: stderr.split('\n').length - 1 },
      durationMs,
      logPath,
      ...o.over,
    };
  }
}

/** Fakes only `performance.now` (and Date): timers, immediates and file streams stay real. */
function fakeClock(): void {
  jest.useFakeTimers({
    doNotFake: [
      'nextTick',
      'setImmediate',
      'clearImmediate',
      'setTimeout',
      'clearTimeout',
      'setInterval',
      'clearInterval',
      'queueMicrotask',
      'hrtime',
    ],
  });
}

const LIMITS: TaskLimits = { maxCommands: 25, budgetMs: 600_000, commandTimeoutMs: 30_000 };
const TASK = 'Print a and b, one per command.';
const ENVIRONMENT = 'image alpine:3.20; working directory /workspace; network none; /bin/sh';
const INVALID_NOTE = 'Your previous answer was invalid (';
const NO_CALL = 'expected one call to nextCommand, taskComplete or taskFailed; got no call';

async function run(
  model: TaskModel,
  options: { runner?: FakeRunner; limits?: Partial<TaskLimits> } & Partial<Pick<RunTaskOptions, 'signal' | 'taskDescription'>> = {},
) {
  fakeClock();
  const runner = options.runner ?? new FakeRunner(tempDir('gcd-cmd-logs-'));
  const progress: TaskProgress[] = [];
  const result = await runTask({
    sandbox: runner,
    model,
    taskDescription: options.taskDescription ?? TASK,
    environment: ENVIRONMENT,
    limits: { ...LIMITS, ...options.limits },
    log: new LogStore(tempDir('gcd-task-logs-'), 'task-unit').create('task'),
    onProgress: (p) => progress.push(p),
    ...(options.signal ? { signal: options.signal } : {}),
  });
  return { result, runner, progress, log: readFileSync(result.logPath, 'utf8') };
}

// ---------------------------------------------------------------------------------------

describe('the loop ends as the model says', () => {
  test('completion after two commands: each runs once, its result feeds the next prompt, then one summary call', async () => {
    const model = new ScriptedTaskModel([cmd('echo a', 'print a'), cmd('echo b'), complete('both printed')], [summary('Printed a and b.')]);
    const { result, runner, progress } = await run(model);

    expect(result).toMatchObject({
      success: true,
      endReason: 'completed',
      reason: 'The task was completed.',
      commandsRun: 2,
      summaryKind: 'model',
      summary: 'The task was completed. Printed a and b.',
    });
    expect(result.stepPromptChars).toHaveLength(3);
    expect(runner.calls.map((c) => [c.command, c.options.label, c.options.timeoutMs])).toEqual([
      ['echo a', 'task-1', 30_000],
      ['echo b', 'task-2', 30_000],
    ]);
    expect(model.tiers()).toEqual(['step', 'step', 'step', 'summary']);
    const [step1] = model.calls;
    expect(step1).toMatchObject({ system: STEP_SYSTEM_PROMPT });
    expect(step1!.functions.map((f) => f.name)).toEqual(['nextCommand', 'taskComplete', 'taskFailed']);
    expect(model.stepPrompt(1)).toContain(`Environment: ${ENVIRONMENT}`);
    expect(model.stepPrompt(1)).toContain(`Overall Task:\n${TASK}`);
    expect(model.stepPrompt(1)).toContain('(no commands run yet)');
    expect(model.stepPrompt(3)).toContain('#1 $ echo a\nout of echo a\n-> exit 0');
    expect(model.stepPrompt(3)).toContain('#2 $ echo b\nout of echo b\n-> exit 0');
    const summaryCall = model.calls[3]!;
    expect(summaryCall.functions.map((f) => f.name)).toEqual(['taskSummary']);
    expect(summaryCall.prompt).toContain('#2 $ echo b\nout of echo b\n-> exit 0');
    expect(summaryCall.prompt).toContain('Outcome: The task was completed.');
    expect(progress.map((p) => (p.end ? `end ${p.end}` : p.result ? `done ${p.step}` : `run ${p.step} ${p.command}`))).toEqual([
      'run 1 echo a',
      'done 1',
      'run 2 echo b',
      'done 2',
      'end completed',
    ]);
  });

  test('taskFailed ends it unsuccessfully with the model’s reason', async () => {
    const model = new ScriptedTaskModel([cmd('ls /nothing'), failed('/nothing does not exist')]);
    const { result } = await run(model, {
      runner: new FakeRunner(tempDir(), () => ({ stderr: 'ls: /nothing: No such file or directory\n', exitCode: 1 })),
    });
    expect(result).toMatchObject({
      success: false,
      endReason: 'failed',
      commandsRun: 1,
      reason: 'The task failed: /nothing does not exist',
    });
    expect(model.stepPrompt(2)).toContain('#1 $ ls /nothing\n[stderr]\nls: /nothing: No such file or directory\n-> exit 1');
  });
});

describe('invalid model answers', () => {
  test('an invalid answer is fed back once in the next prompt; it is not a command, and the step is asked again', async () => {
    const model = new ScriptedTaskModel([[], cmd('echo ok'), complete()]);
    const { result, runner, log } = await run(model, { limits: { maxCommands: 5 } });

    expect(result).toMatchObject({ success: true, endReason: 'completed', commandsRun: 1 });
    // Three step requests were made and measured; one command ran.
    expect(result.stepPromptChars).toHaveLength(3);
    expect(runner.calls.map((c) => c.command)).toEqual(['echo ok']);
    expect(model.stepPrompt(1)).not.toContain(INVALID_NOTE);
    expect(model.stepPrompt(2)).toContain(
      `${INVALID_NOTE}${NO_CALL}). Answer with exactly one call: nextCommand, taskComplete or taskFailed.`,
    );
    // The invalid answer used none of the command budget.
    expect(model.stepPrompt(2)).toContain('Limits: 5 commands');
    expect(model.stepPrompt(3)).not.toContain(INVALID_NOTE);
    expect(log).toContain(`invalid model answer: ${NO_CALL}\n`);
  });

  test('a model call that throws counts as an invalid answer', async () => {
    const model = new ScriptedTaskModel([new Error('HTTP 503 from the model'), complete()]);
    const { result } = await run(model);
    expect(result).toMatchObject({ success: true, commandsRun: 0 });
    expect(model.stepPrompt(2)).toContain(`${INVALID_NOTE}model call failed: HTTP 503 from the model)`);
  });

  test('two invalid answers in a row end the task with model-error', async () => {
    const model = new ScriptedTaskModel([[], [{ name: 'nextCommand', args: { command: '  ' } }]], [summary('No usable step.')]);
    const { result, runner } = await run(model);
    expect(result).toMatchObject({ success: false, endReason: 'model-error', commandsRun: 0 });
    expect(result.reason).toBe('Stopped: the model gave no valid next step (nextCommand: command: command is empty).');
    expect(runner.calls).toEqual([]);
    expect(model.tiers()).toEqual(['step', 'step', 'summary']);
  });
});

describe('limits', () => {
  test('maxCommands: a model that never stops gets exactly that many commands, and the end says so', async () => {
    let n = 0;
    const model = new ScriptedTaskModel([], [summary('Ran out.')], (tier) => (tier === 'step' ? cmd(`echo ${++n}`) : summary('x')));
    const { result, runner } = await run(model, { limits: { maxCommands: 3 } });

    expect(result).toMatchObject({ success: false, endReason: 'max-commands', commandsRun: 3 });
    expect(result.reason).toBe('Stopped: the limit of 3 commands was reached before the task was done.');
    expect(runner.calls.map((c) => c.command)).toEqual(['echo 1', 'echo 2', 'echo 3']);
    expect(model.tiers()).toEqual(['step', 'step', 'step', 'summary']);
    expect(model.stepPrompt(1)).toContain('Limits: 3 commands');
    expect(model.stepPrompt(3)).toContain('Limits: 1 commands');
  });

  test('the wall-clock budget: each command’s timeout is cut to what is left, and a spent budget ends the task', async () => {
    const model = new ScriptedTaskModel([], [summary('Out of time.')], () => cmd('make'));
    // The first command takes 7 s of a 10 s budget, the second the remaining 3 s.
    const runner = new FakeRunner(tempDir(), (_c, n) => ({ output: 'building\n', durationMs: n === 1 ? 7_000 : 3_000 }));
    const { result } = await run(model, { runner, limits: { budgetMs: 10_000, commandTimeoutMs: 60_000 } });

    expect(result).toMatchObject({ success: false, endReason: 'budget', commandsRun: 2 });
    expect(result.reason).toBe('Stopped: the time budget of 10 s ran out before the task was done.');
    expect(runner.calls.map((c) => c.options.timeoutMs)).toEqual([10_000, 3_000]);
    expect(model.stepPrompt(2)).toContain('Limits: 24 commands and 3 s left.');
    // No step is asked once the budget is spent.
    expect(model.tiers()).toEqual(['step', 'step', 'summary']);
  });
});

test('a step call that itself uses up the budget: no command starts after it', async () => {
  const model = new ScriptedTaskModel([], [summary('Out of time.')], (tier) => {
    // The step model takes 15 s of a 10 s budget before it answers.
    if (tier === 'step') jest.advanceTimersByTime(15_000);
    return tier === 'step' ? cmd('rm -rf build') : summary('Out of time.');
  });
  const runner = new FakeRunner(tempDir());
  const { result } = await run(model, { runner, limits: { budgetMs: 10_000, commandTimeoutMs: 60_000 } });
  expect(result).toMatchObject({ success: false, endReason: 'budget', commandsRun: 0 });
  expect(runner.calls).toEqual([]);
});

describe('aborts and container failures', () => {
  test('an ABORTED SandboxError from the runner ends the task as aborted, with no further model call', async () => {
    const model = new ScriptedTaskModel([cmd('sleep 100')], [summary('should not be asked')]);
    const runner = new FakeRunner(tempDir(), () => new SandboxError('ABORTED', 'Not started: the operation was aborted.'));
    const { result, log } = await run(model, { runner });

    expect(result).toMatchObject({
      success: false,
      endReason: 'aborted',
      reason: 'The task was aborted: interrupted by the user.',
      commandsRun: 0,
      summaryKind: 'extractive',
      summary: 'aborted (interrupted by the user). 0 commands run.',
    });
    expect(model.tiers()).toEqual(['step']);
    expect(log).toContain('$ sleep 100\n[interrupted by the user]\n');
  });

  test('any other runner error ends it as a container error, and the summary is still asked', async () => {
    const model = new ScriptedTaskModel([cmd('echo a'), cmd('echo b')], [summary('The container went away.')]);
    const runner = new FakeRunner(tempDir(), (command) =>
      command === 'echo b'
        ? new SandboxError('CONTAINER_NOT_FOUND', 'Container abc no longer exists.', { data: { containerId: 'abc' } })
        : { output: 'a\n' },
    );
    const { result } = await run(model, { runner });
    expect(result).toMatchObject({ success: false, endReason: 'container-error', commandsRun: 1, summaryKind: 'model' });
    expect(result.reason).toBe('Stopped: the container failed (Container abc no longer exists.).');
  });

  test('a command that comes back canceled ends the task as aborted after it', async () => {
    const model = new ScriptedTaskModel([cmd('sleep 100'), cmd('echo never')]);
    const runner = new FakeRunner(tempDir(), () => ({ exitCode: 137, over: { canceled: true, reason: 'canceled' } }));
    const { result, log } = await run(model, { runner });
    expect(result).toMatchObject({ endReason: 'aborted', commandsRun: 1, summaryKind: 'extractive' });
    expect(result.summary).toBe('aborted (interrupted during a command). 1 command run. Last: `sleep 100` -> exit 137.');
    expect(runner.calls).toHaveLength(1);
    expect(log).toContain('-> exit 137 in 5 ms (canceled)');
  });

  test('a signal aborted before the start asks nothing and runs nothing', async () => {
    const abort = new AbortController();
    abort.abort();
    const model = new ScriptedTaskModel([cmd('echo x')]);
    const { result, runner } = await run(model, { signal: abort.signal });
    expect(result).toMatchObject({ endReason: 'aborted', commandsRun: 0 });
    expect(model.calls).toEqual([]);
    expect(runner.calls).toEqual([]);
  });
});

describe('the summary', () => {
  test('a failing summary model falls back to the extractive summary', async () => {
    const model = new ScriptedTaskModel([cmd('echo a'), cmd('echo b'), complete('both echoed')], [new Error('summary model unavailable')]);
    const { result, log } = await run(model);
    expect(result).toMatchObject({ success: true, summaryKind: 'extractive' });
    expect(result.summary).toBe(
      "The task was completed. 2 commands run. Last: `echo a` -> exit 0; `echo b` -> exit 0. Model's note: both echoed",
    );
    expect(log).toContain(`# Summary (extractive)\n${result.summary}\n`);
  });

  test('a summary answer without taskSummary text is replaced by the extractive summary', async () => {
    const model = new ScriptedTaskModel([cmd('echo a'), complete()], [[{ name: 'taskSummary', args: { summary: '  ' } }]]);
    const { result } = await run(model);
    expect(result.summaryKind).toBe('extractive');
    expect(result.summary).toBe('The task was completed. 1 command run. Last: `echo a` -> exit 0.');
  });
});

describe('the step prompt', () => {
  test('stays bounded as the history grows: within the history budget, and flat once the older commands are condensed', async () => {
    const steps: Answer[] = [];
    for (let i = 1; i <= 30; i++) steps.push(cmd(`make target-${i}`));
    steps.push(complete());
    const model = new ScriptedTaskModel(steps);
    const body = (i: number) => Array.from({ length: 9 }, (_, l) => `target ${i} line ${l}: lorem ipsum dolor sit amet`).join('\n');
    const runner = new FakeRunner(tempDir(), (_c, i) =>
      i % 3 === 0 ? { output: `${body(i)}\nerror: target ${i} failed\n`, exitCode: 2 } : { output: `${body(i)}\n` },
    );
    const { result } = await run(model, { runner, limits: { maxCommands: 40 } });

    expect(result).toMatchObject({ success: true, commandsRun: 30 });
    const chars = result.stepPromptChars;
    expect(chars).toHaveLength(31);
    // 30 commands of ~450 characters each: 13,500 characters of output in all.
    const empty = chars[0]!;
    for (const c of chars) expect(c).toBeLessThanOrEqual(empty + HISTORY_LIMITS.budgetChars);
    // From step 21 on, the prompt no longer grows (within 1%: step numbers gain digits).
    const late = chars.slice(20);
    expect(Math.max(...late) - Math.min(...late)).toBeLessThanOrEqual(0.01 * Math.max(...late));
    // The newest command is there in full; the oldest only as a count.
    expect(model.stepPrompt(31)).toContain('#30 $ make target-30\ntarget 30 line 0');
    expect(model.stepPrompt(31)).toMatch(/\(\d+ earlier commands not shown: \d+ succeeded, \d+ failed; all are in the task log\)/);
  });
});

describe('the task log', () => {
  test('holds the task, every command with its reasoning and full output, each exit, the end and the summary', async () => {
    const numbers = Array.from({ length: 3000 }, (_, i) => String(i + 1)).join('\n');
    const model = new ScriptedTaskModel(
      [cmd('seq 1 3000', 'print many numbers'), cmd('false'), complete('numbers printed')],
      [summary('Printed 3000 numbers; false failed.')],
    );
    const runner = new FakeRunner(tempDir(), (command) =>
      command === 'false'
        ? { exitCode: 1, durationMs: 3 }
        : { output: `${numbers}\n`, stdout: '1\n2\n[... 2996 lines cut ...]\n2999\n3000\n', durationMs: 12 },
    );
    const { result, log } = await run(model, { runner, taskDescription: 'Print 1 to 3000, then fail once.' });

    expect(log).toContain(
      `# Task\nPrint 1 to 3000, then fail once.\n# Environment\n${ENVIRONMENT}\n# Limits\n25 commands, 600000 ms, 30000 ms per command\n`,
    );
    // The full output, not the capped window the result (and so the model) had.
    expect(log).toContain(`## step 1\nreasoning: print many numbers\n$ seq 1 3000\n${numbers}\n\n-> exit 0 in 12 ms\n`);
    expect(model.stepPrompt(2)).not.toContain('\n1500\n');
    expect(log).toContain('## step 2\n$ false\n\n-> exit 1 in 3 ms\n');
    expect(log).toContain('## step 3: taskComplete: numbers printed\n');
    expect(log).toContain('# End\nThe task was completed.\n');
    expect(log).toContain(`# Summary (model)\n${result.summary}\n`);
    expect(result.summary).toBe('The task was completed. Printed 3000 numbers; false failed.');
  });
});
