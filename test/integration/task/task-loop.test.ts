/**
 * runTask, the runContainerTask inner loop, against a real engine
 * (busybox sandbox) with a scripted model: success, recovery from a failing command,
 * taskFailed, each limit (commands, wall clock), invalid model answers, a failing summary
 * call, abort, the task log, and the bounded size of each step prompt.
 */
import { readFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import type { FunctionCall } from '../../../src/prompt/host/genaicode-types.js';
import {
  runTask,
  STEP_SYSTEM_PROMPT,
  type RunTaskOptions,
  type TaskLimits,
  type TaskProgress,
  type TaskResult,
} from '../../../src/task/task-loop.js';
import type { ModelRequest, TaskModel } from '../../../src/task/task-model.js';
import { docker, sharedSandbox, engineSuite } from '../../support/engine.js';
import { tempDir } from '../../support/temp-dirs.js';
import { LogStore } from '../../../src/capture/log-store.js';

const shared = sharedSandbox();
const sandbox = shared.get;

engineSuite('task-loop', {
  afterAll: async () => {
    await shared.release();
  },
});

// ---------------------------------------------------------------------------------------
// The scripted model

type Tier = 'step' | 'summary';
/** One scripted answer: the calls to return, an error to throw, or a function of the request. */
type Answer = FunctionCall[] | Error | ((request: ModelRequest, signal?: AbortSignal) => Promise<FunctionCall[]>);

interface RecordedCall {
  tier: Tier;
  system: string;
  prompt: string;
  functions: string[];
}

/** Pops scripted answers, one queue per tier, and records every request it gets. */
class ScriptedModel implements TaskModel {
  readonly calls: RecordedCall[] = [];
  private readonly queues: Record<Tier, Answer[]>;

  constructor(
    steps: Answer[],
    summaries: Answer[] = [[{ name: 'taskSummary', args: { summary: 'scripted summary' } }]],
    /** Answers once a queue is empty; without it, an empty queue fails the test. */
    private readonly otherwise?: (tier: Tier) => Answer,
  ) {
    this.queues = { step: [...steps], summary: [...summaries] };
  }

  async call(tier: Tier, request: ModelRequest, signal?: AbortSignal): Promise<FunctionCall[]> {
    this.calls.push({ tier, system: request.system, prompt: request.prompt, functions: request.functions.map((f) => f.name) });
    const answer = this.queues[tier].shift() ?? this.otherwise?.(tier);
    if (answer === undefined) throw new Error(`script exhausted: no ${tier} answer left (call ${this.calls.length})`);
    if (answer instanceof Error) throw answer;
    if (typeof answer === 'function') return answer(request, signal);
    return answer;
  }

  of(tier: Tier): RecordedCall[] {
    return this.calls.filter((c) => c.tier === tier);
  }

  /** The prompt of the n-th step call (1-based). */
  stepPrompt(n: number): string {
    const c = this.of('step')[n - 1];
    if (!c) throw new Error(`there was no step call ${n} (only ${this.of('step').length})`);
    return c.prompt;
  }
}

const cmd = (command: string, reasoning?: string): FunctionCall[] => [
  { name: 'nextCommand', args: { command, ...(reasoning ? { reasoning } : {}) } },
];
const complete = (summary?: string): FunctionCall[] => [{ name: 'taskComplete', args: summary ? { summary } : {} }];
const failed = (reason: string): FunctionCall[] => [{ name: 'taskFailed', args: { reason } }];
const summary = (text: string): FunctionCall[] => [{ name: 'taskSummary', args: { summary: text } }];

const LIMITS: TaskLimits = { maxCommands: 25, budgetMs: 120_000, commandTimeoutMs: 30_000 };
const SUMMARY_HEAD = 'Based on the following task description and the full command log, provide a concise summary of the outcome.';
const INVALID_NOTE = 'Your previous answer was invalid (';

function uid(): string {
  return randomBytes(4).toString('hex');
}

async function run(
  model: TaskModel,
  over: Partial<Omit<RunTaskOptions, 'sandbox' | 'model' | 'limits'>> & { limits?: Partial<TaskLimits> } = {},
): Promise<{ result: TaskResult; progress: TaskProgress[]; log: string }> {
  const progress: TaskProgress[] = [];
  const { limits, onProgress, ...rest } = over;
  const result = await runTask({
    sandbox: await sandbox(),
    model,
    taskDescription: 'a scripted test task',
    environment: 'image genaicode-docker/sandbox-minimal:latest; working directory /workspace; network none; /bin/sh',
    log: new LogStore(tempDir('gcd-task-'), 'task-test').create('task'),
    ...rest,
    limits: { ...LIMITS, ...limits },
    onProgress: (p) => {
      progress.push(p);
      onProgress?.(p);
    },
  });
  return { result, progress, log: readFileSync(result.logPath, 'utf8') };
}

// ---------------------------------------------------------------------------------------

describe('the loop ends as the model says', () => {
  test('success: two commands, taskComplete, then one summary call (the summary prompt) whose answer is the summary', async () => {
    const file = `greeting-${uid()}.txt`;
    const model = new ScriptedModel(
      [cmd(`echo hello > ${file}`, 'create the file'), cmd(`cat ${file}`, 'check it'), complete('the file holds hello')],
      [summary('Created the greeting file; it contains hello.')],
    );
    const { result, progress } = await run(model, { taskDescription: `Create ${file} containing hello and show it.` });

    expect(result).toMatchObject({
      success: true,
      endReason: 'completed',
      commandsRun: 2,
      summaryKind: 'model',
      reason: 'The task was completed.',
    });
    expect(result.summary).toContain('Created the greeting file; it contains hello.');
    expect(result.stepPromptChars).toHaveLength(3);

    expect(model.calls.map((c) => c.tier)).toEqual(['step', 'step', 'step', 'summary']);
    for (const c of model.of('step')) {
      expect(c.system).toBe(STEP_SYSTEM_PROMPT);
      expect(c.functions).toEqual(['nextCommand', 'taskComplete', 'taskFailed']);
      expect(c.prompt).toContain(`Overall Task:\nCreate ${file} containing hello and show it.`);
    }
    expect(model.stepPrompt(1)).toContain('(no commands run yet)');
    expect(model.stepPrompt(3)).toContain(`#2 $ cat ${file}\nhello\n-> exit 0`);

    const [sum] = model.of('summary');
    expect(model.of('summary')).toHaveLength(1);
    expect(sum!.functions).toEqual(['taskSummary']);
    expect(sum!.prompt.startsWith(SUMMARY_HEAD)).toBe(true);
    expect(sum!.prompt).toContain(`Task Description:\nCreate ${file} containing hello and show it.`);
    expect(sum!.prompt).toContain(`#1 $ echo hello > ${file}`);
    expect(sum!.prompt).toContain(`#2 $ cat ${file}\nhello\n-> exit 0`);

    // Progress: each command announced, then its result, then the end.
    expect(
      progress.map((p) => (p.end ? `end ${p.end}` : p.result ? `done ${p.step} ${p.result.exitCode}` : `run ${p.step} ${p.command}`)),
    ).toEqual([`run 1 echo hello > ${file}`, 'done 1 0', `run 2 cat ${file}`, 'done 2 0', 'end completed']);
  });

  test('a failing command is shown with its exit code in the next prompt; the model fixes it and completes', async () => {
    const file = `notes-${uid()}.txt`;
    const model = new ScriptedModel([
      cmd(`cat ${file}`),
      cmd(`echo fixed > ${file}`, 'create the missing file'),
      cmd(`cat ${file}`),
      complete(),
    ]);
    const { result } = await run(model);

    expect(result).toMatchObject({ success: true, endReason: 'completed', commandsRun: 3 });
    expect(model.stepPrompt(2)).toMatch(
      new RegExp(`#1 \\$ cat ${file}\\n\\[stderr\\]\\ncat: can't open '${file}': No such file or directory\\n-> exit 1`),
    );
    expect(model.stepPrompt(4)).toContain(`#1 $ cat ${file}`);
    expect(model.stepPrompt(4)).toContain(`#3 $ cat ${file}\nfixed\n-> exit 0`);
    expect(model.of('summary')[0]!.prompt).toMatch(/-> exit 1/);
  });

  test('taskFailed: success false, with the reason in the result and the summary', async () => {
    const model = new ScriptedModel(
      [cmd('ls /opt/nothing-here'), failed('the directory /opt/nothing-here does not exist')],
      [summary('Listing failed: no such directory.')],
    );
    const { result } = await run(model);

    expect(result).toMatchObject({ success: false, endReason: 'failed', commandsRun: 1, summaryKind: 'model' });
    expect(result.reason).toBe('The task failed: the directory /opt/nothing-here does not exist');
    expect(result.summary).toContain('the directory /opt/nothing-here does not exist');
    expect(result.summary).toContain('Listing failed: no such directory.');
    // The summary model is told how the task ended.
    expect(model.of('summary')[0]!.prompt).toContain('The task failed: the directory /opt/nothing-here does not exist');
  });
});

describe('limits', () => {
  test('max commands: with a limit of 3 and a model that keeps asking, exactly 3 commands run', async () => {
    let n = 0;
    const model = new ScriptedModel([], undefined, (tier) => (tier === 'step' ? cmd(`echo again-${++n}`) : summary('ran out of commands')));
    const { result, progress } = await run(model, { limits: { maxCommands: 3 } });

    expect(result).toMatchObject({ success: false, endReason: 'max-commands', commandsRun: 3 });
    expect(result.reason).toBe('Stopped: the limit of 3 commands was reached before the task was done.');
    expect(model.of('step')).toHaveLength(3);
    expect(progress.filter((p) => p.result).map((p) => p.command)).toEqual(['echo again-1', 'echo again-2', 'echo again-3']);
    expect(model.stepPrompt(1)).toMatch(/Limits: 3 commands/);
    expect(model.stepPrompt(3)).toMatch(/Limits: 1 commands?/);
  });

  test('wall-clock budget: a long command is cut by what is left of the budget, and the task ends with "budget"', async () => {
    const model = new ScriptedModel([cmd('sleep 30')], [summary('The sleep did not finish in time.')], () => complete());
    const started = performance.now();
    const { result, progress, log } = await run(model, { limits: { budgetMs: 3_000, commandTimeoutMs: 60_000 } });
    const elapsed = performance.now() - started;

    expect(result).toMatchObject({ success: false, endReason: 'budget', commandsRun: 1 });
    expect(result.reason).toBe('Stopped: the time budget of 3 s ran out before the task was done.');
    const done = progress.find((p) => p.result)!;
    expect(done.result!.timedOut).toBe(true);
    expect(done.result!.exitCode).toBe(124);
    // Cut by the 3 s budget, not by the 60 s per-command timeout.
    expect(done.result!.durationMs).toBeGreaterThanOrEqual(2_000);
    expect(done.result!.durationMs).toBeLessThan(20_000); // far from the 60 s per-command timeout
    const cutAfter = Number(/timed out after (\d+) ms/.exec(log)?.[1]);
    expect(cutAfter).toBeGreaterThan(2_000);
    expect(cutAfter).toBeLessThanOrEqual(3_000);
    expect(model.of('step')).toHaveLength(1);
    expect(elapsed).toBeLessThan(20_000);
  });
});

describe('invalid model answers', () => {
  test.each<[string, Answer, string]>([
    ['no call', [], 'expected one call to nextCommand, taskComplete or taskFailed; got no call'],
    [
      'an unknown function',
      [{ name: 'runShell', args: { cmd: 'ls' } }],
      'expected one call to nextCommand, taskComplete or taskFailed; got runShell',
    ],
    ['nextCommand with an empty command', [{ name: 'nextCommand', args: { command: '' } }], 'nextCommand: command: command is empty'],
    ['a model call that throws', new Error('HTTP 503 from the model'), 'model call failed: HTTP 503 from the model'],
  ])('%s: retried once with a note in the next prompt, then the task goes on', async (_name, bad, error) => {
    const model = new ScriptedModel([bad, cmd('echo recovered'), complete()]);
    const { result, log } = await run(model);

    expect(result).toMatchObject({ success: true, endReason: 'completed', commandsRun: 1 });
    expect(model.of('step')).toHaveLength(3);
    expect(model.stepPrompt(1)).not.toContain(INVALID_NOTE);
    expect(model.stepPrompt(2)).toContain(
      `${INVALID_NOTE}${error}). Answer with exactly one call: nextCommand, taskComplete or taskFailed.`,
    );
    // Once a valid answer came, the note is gone.
    expect(model.stepPrompt(3)).not.toContain(INVALID_NOTE);
    expect(model.stepPrompt(3)).toContain('#1 $ echo recovered\nrecovered\n-> exit 0');
    expect(log).toContain(`invalid model answer: ${error}`);
  });

  test('invalid twice in a row: the task ends with "model-error", no command run', async () => {
    const model = new ScriptedModel(
      [[], [{ name: 'taskSummary', args: { summary: 'wrong tier' } }]],
      [summary('The model gave no usable step.')],
    );
    const { result } = await run(model);

    expect(result).toMatchObject({ success: false, endReason: 'model-error', commandsRun: 0 });
    expect(result.reason).toBe(
      'Stopped: the model gave no valid next step (expected one call to nextCommand, taskComplete or taskFailed; got taskSummary).',
    );
    expect(model.of('step')).toHaveLength(2);
  });

  test('invalid answers that are not consecutive are each forgiven once', async () => {
    const model = new ScriptedModel([[], cmd('echo one'), [{ name: 'nope' }], cmd('echo two'), complete()]);
    const { result } = await run(model);
    expect(result).toMatchObject({ success: true, endReason: 'completed', commandsRun: 2 });
    expect(model.stepPrompt(4)).toContain(`${INVALID_NOTE}expected one call to nextCommand, taskComplete or taskFailed; got nope)`);
  });
});

describe('summary', () => {
  test('a summary call that throws gives an extractive summary, and the result is still returned', async () => {
    const model = new ScriptedModel([cmd('echo a'), cmd('echo b'), complete('both echoed')], [new Error('summary model unavailable')]);
    const { result, log } = await run(model);

    expect(result).toMatchObject({ success: true, endReason: 'completed', commandsRun: 2, summaryKind: 'extractive' });
    expect(result.summary).toBe(
      "The task was completed. 2 commands run. Last: `echo a` -> exit 0; `echo b` -> exit 0. Model's note: both echoed",
    );
    expect(model.of('summary')).toHaveLength(1);
    expect(log).toContain(`# Summary (extractive)\n${result.summary}\n`);
  });

  test('a summary answer without taskSummary text is replaced by the extractive summary', async () => {
    const model = new ScriptedModel([cmd('echo only'), complete()], [[{ name: 'taskSummary', args: { summary: '   ' } }]]);
    const { result } = await run(model);
    expect(result.summaryKind).toBe('extractive');
    expect(result.summary).toContain('1 command run.');
  });
});

describe('abort', () => {
  test('aborting during a long command kills it and ends the task as "aborted"', async () => {
    const sb = await sandbox();
    const marker = String(300 + Math.floor(Math.random() * 600));
    const abort = new AbortController();
    const model = new ScriptedModel([cmd(`sleep ${marker}; echo never-printed`)], [summary('should not be asked')], () => complete());
    let abortedAt = 0;
    const running = run(model, {
      signal: abort.signal,
      onProgress: (p) => {
        if (p.command && !p.result) {
          // Abort once the command is really running in the container.
          void (async () => {
            for (let i = 0; i < 100; i++) {
              const ps = await docker(['exec', sb.id, 'ps', '-o', 'pid,args']);
              if (new RegExp(`\\bsleep ${marker}\\b`).test(ps.stdout)) break;
              await new Promise((r) => setTimeout(r, 100));
            }
            abortedAt = performance.now();
            abort.abort();
          })();
        }
      },
    });
    const { result, log } = await running;
    const afterAbortMs = performance.now() - abortedAt;

    expect(abortedAt).toBeGreaterThan(0);
    expect(result).toMatchObject({ success: false, endReason: 'aborted', commandsRun: 1 });
    expect(result.summary.startsWith('aborted')).toBe(true);
    expect(result.summaryKind).toBe('extractive');
    expect(afterAbortMs).toBeLessThan(10_000);
    // The user stopped it: no further model call, not even the summary.
    expect(model.calls.map((c) => c.tier)).toEqual(['step']);
    // The command after the sleep never ran (its text is in the log only as part of the command line).
    expect(log).not.toMatch(/^never-printed$/m);
    expect(log).toMatch(/-> exit 137 in \d+ ms \(canceled; its process tree was killed\)/);
    // The command's process is gone from the container.
    const ps = await docker(['exec', sb.id, 'ps', '-o', 'pid,args']);
    expect(ps.code).toBe(0);
    expect(ps.stdout).not.toMatch(new RegExp(`\\bsleep ${marker}\\b`));
  });

  test('a signal aborted before the start runs nothing and asks nothing', async () => {
    const abort = new AbortController();
    abort.abort();
    const model = new ScriptedModel([cmd('echo x')]);
    const { result } = await run(model, { signal: abort.signal });
    expect(result).toMatchObject({ success: false, endReason: 'aborted', commandsRun: 0 });
    expect(result.summary.startsWith('aborted')).toBe(true);
    expect(model.calls).toHaveLength(0);
  });
});

describe('the task log', () => {
  test('holds every command, its full output (beyond what the model saw), the reasoning, the end and the summary', async () => {
    const model = new ScriptedModel(
      [cmd('seq 1 8000', 'print many numbers'), cmd('echo to-stderr >&2; exit 3', 'a failing command'), complete('numbers printed')],
      [summary('Printed 8000 numbers; the second command failed with exit 3.')],
    );
    const { result, log } = await run(model, { taskDescription: 'Print the numbers 1 to 8000, then fail once.' });

    expect(result.success).toBe(true);
    expect(log).toContain('# Task\nPrint the numbers 1 to 8000, then fail once.\n');
    expect(log).toContain('# Environment\nimage genaicode-docker/sandbox-minimal:latest');
    expect(log).toContain('## step 1\nreasoning: print many numbers\n$ seq 1 8000\n');
    // All 8000 lines, in order: the full output, not the capped window.
    const numbers = Array.from({ length: 8000 }, (_, i) => String(i + 1)).join('\n');
    expect(log).toContain(`$ seq 1 8000\n${numbers}\n`);
    expect(log).toMatch(/\n8000\n\n-> exit 0 in \d+ ms\n/);
    // ...while the model's history had only a clipped window of it.
    expect(model.stepPrompt(2)).not.toContain('\n4000\n');
    expect(model.stepPrompt(2)).toMatch(/characters cut|\[\.\.\./);

    expect(log).toContain('## step 2\nreasoning: a failing command\n$ echo to-stderr >&2; exit 3\nto-stderr\n');
    expect(log).toMatch(/-> exit 3 in \d+ ms/);
    expect(log).toContain('## step 3: taskComplete: numbers printed\n');
    expect(log).toContain('# End\nThe task was completed.\n');
    expect(log).toContain(`# Summary (model)\n${result.summary}\n`);
    expect(result.summary).toContain('Printed 8000 numbers; the second command failed with exit 3.');
  });
});

describe('history bounding', () => {
  test('over 25 steps of ~400 bytes of output each, no step prompt after step 5 exceeds 1.10x the step-5 prompt', async () => {
    const steps: Answer[] = [];
    for (let i = 1; i <= 25; i++) {
      const n = String(i).padStart(2, '0');
      steps.push(cmd(`yes 'step ${n}: lorem ipsum dolor sit amet, consectetur adipiscing' | head -n 7`));
    }
    steps.push(complete('25 steps done'));
    const model = new ScriptedModel(steps);
    const { result } = await run(model, {
      taskDescription: 'Run the 25 steps of the lorem generator one by one and check that each prints its seven lines.',
      limits: { maxCommands: 30 },
    });

    expect(result).toMatchObject({ success: true, commandsRun: 25 });
    expect(model.stepPrompt(6)).toContain('step 05: lorem ipsum');
    const series = result.stepPromptChars;
    expect(series).toHaveLength(26);
    const atFive = series[4]!;
    const worst = Math.max(...series.slice(5));
    console.log(
      `stepPromptChars (26 step prompts): ${series.join(', ')}\nstep 5: ${atFive}; max after: ${worst} (${(worst / atFive).toFixed(3)}x)`,
    );
    const over = series
      .map((chars, i) => ({ step: i + 1, chars, ratio: Number((chars / atFive).toFixed(3)) }))
      .filter((x) => x.step > 5 && x.chars > 1.1 * atFive);
    expect(over).toEqual([]);
  });
});
