/**
 * parseStep: the model's function calls read as one step, or a message that says what is
 * wrong (the loop shows it to the model once before giving up).
 */
import type { FunctionCall } from '../../../src/prompt/host/genaicode-types.js';
import {
  NEXT_COMMAND_DEF,
  parseStep,
  STEP_FUNCTIONS,
  TASK_COMPLETE_DEF,
  TASK_FAILED_DEF,
  TASK_SUMMARY_DEF,
} from '../../../src/task/task-model.js';

function errorOf(calls: FunctionCall[]): string {
  const r = parseStep(calls);
  if (r.ok) throw new Error(`expected an invalid answer, got ${JSON.stringify(r.step)}`);
  return r.error;
}

describe('the function definitions', () => {
  test('the step functions are nextCommand, taskComplete, taskFailed; the summary function is taskSummary', () => {
    expect(STEP_FUNCTIONS.map((f) => f.name)).toEqual(['nextCommand', 'taskComplete', 'taskFailed']);
    expect(NEXT_COMMAND_DEF.parameters.required).toEqual(['command']);
    expect(Object.keys(NEXT_COMMAND_DEF.parameters.properties)).toEqual(['command', 'reasoning']);
    expect(TASK_COMPLETE_DEF.parameters.required).toEqual([]);
    expect(TASK_FAILED_DEF.parameters.required).toEqual(['reason']);
    expect(TASK_SUMMARY_DEF.name).toBe('taskSummary');
    expect(TASK_SUMMARY_DEF.parameters.required).toEqual(['summary']);
  });
});

describe('parseStep: valid answers', () => {
  test('nextCommand with reasoning', () => {
    expect(parseStep([{ name: 'nextCommand', args: { command: 'ls -la', reasoning: 'look around' } }])).toEqual({
      ok: true,
      step: { kind: 'command', command: 'ls -la', reasoning: 'look around' },
    });
  });

  test('nextCommand without reasoning has no reasoning key', () => {
    const r = parseStep([{ name: 'nextCommand', args: { command: 'pwd' } }]);
    expect(r).toEqual({ ok: true, step: { kind: 'command', command: 'pwd' } });
    expect(r.ok && 'reasoning' in r.step).toBe(false);
  });

  test('nextCommand keeps the command exactly (no trimming of a real command)', () => {
    expect(parseStep([{ name: 'nextCommand', args: { command: "printf '  a  \\n'" } }])).toEqual({
      ok: true,
      step: { kind: 'command', command: "printf '  a  \\n'" },
    });
  });

  test('taskComplete with and without a summary, and with no args at all', () => {
    expect(parseStep([{ name: 'taskComplete', args: { summary: 'all done' } }])).toEqual({
      ok: true,
      step: { kind: 'complete', summary: 'all done' },
    });
    const bare = parseStep([{ name: 'taskComplete', args: {} }]);
    expect(bare).toEqual({ ok: true, step: { kind: 'complete' } });
    expect(bare.ok && 'summary' in bare.step).toBe(false);
    expect(parseStep([{ name: 'taskComplete' }])).toEqual({ ok: true, step: { kind: 'complete' } });
  });

  test('taskFailed with a reason', () => {
    expect(parseStep([{ name: 'taskFailed', args: { reason: 'no compiler in the image' } }])).toEqual({
      ok: true,
      step: { kind: 'failed', reason: 'no compiler in the image' },
    });
  });

  test('extra unknown calls are ignored, before or after the step call', () => {
    expect(
      parseStep([
        { name: 'think', args: { text: 'hmm' } },
        { name: 'nextCommand', args: { command: 'ls' } },
      ]),
    ).toEqual({
      ok: true,
      step: { kind: 'command', command: 'ls' },
    });
    expect(
      parseStep([
        { name: 'taskComplete', args: {} },
        { name: 'explain', args: {} },
      ]),
    ).toEqual({ ok: true, step: { kind: 'complete' } });
    expect(
      parseStep([
        { name: 'taskSummary', args: { summary: 'x' } },
        { name: 'taskFailed', args: { reason: 'r' } },
      ]),
    ).toEqual({
      ok: true,
      step: { kind: 'failed', reason: 'r' },
    });
  });
});

describe('parseStep: invalid answers', () => {
  test('no call at all', () => {
    expect(errorOf([])).toBe('expected one call to nextCommand, taskComplete or taskFailed; got no call');
  });

  test('only unknown functions: the error names them', () => {
    expect(
      errorOf([
        { name: 'runShell', args: { cmd: 'ls' } },
        { name: 'taskSummary', args: { summary: 's' } },
      ]),
    ).toBe('expected one call to nextCommand, taskComplete or taskFailed; got runShell, taskSummary');
  });

  test('nextCommand with an empty or blank command', () => {
    expect(errorOf([{ name: 'nextCommand', args: { command: '' } }])).toBe('nextCommand: command: command is empty');
    expect(errorOf([{ name: 'nextCommand', args: { command: '  \n\t ' } }])).toBe('nextCommand: command: command is empty');
  });

  test('nextCommand without a command, or with a command that is not a string', () => {
    expect(errorOf([{ name: 'nextCommand', args: { reasoning: 'x' } }])).toMatch(/^nextCommand: command: Required$/);
    expect(errorOf([{ name: 'nextCommand' }])).toMatch(/^nextCommand: command: Required$/);
    expect(errorOf([{ name: 'nextCommand', args: { command: ['ls', '-la'] } }])).toMatch(
      /^nextCommand: command: Expected string, received array$/,
    );
  });

  test('nextCommand with a reasoning that is not a string', () => {
    expect(errorOf([{ name: 'nextCommand', args: { command: 'ls', reasoning: 42 } }])).toMatch(
      /^nextCommand: reasoning: Expected string, received number$/,
    );
  });

  test('taskComplete with a summary that is not a string', () => {
    expect(errorOf([{ name: 'taskComplete', args: { summary: { text: 'x' } } }])).toBe('taskComplete: summary must be a string');
  });

  test('taskFailed without a reason, or with an empty one', () => {
    expect(errorOf([{ name: 'taskFailed', args: {} }])).toBe('taskFailed: Required');
    expect(errorOf([{ name: 'taskFailed', args: { reason: '' } }])).toBe('taskFailed: reason is required');
  });
});
