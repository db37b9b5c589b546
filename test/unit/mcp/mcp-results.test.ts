import { callFromText, firstJsonObject } from '../../../src/mcp/client-model.js';
import { errorOutcome, fitAnswer, MAX_ANSWER_CHARS, toolResult } from '../../../src/mcp/tool-result.js';
import { SandboxError } from '../../../src/errors.js';

test('an answer within the limit is unchanged; a larger one is cut, longest strings first, with a marker', () => {
  const small = { exitCode: 0, output: 'hi\n' };
  expect(fitAnswer(small)).toBe(small);
  const big = { exitCode: 1, summary: 's'.repeat(500), keyLines: ['k'.repeat(30_000), 'short'], text: 't'.repeat(60_000) };
  const fitted = fitAnswer(big);
  expect(JSON.stringify(fitted).length).toBeLessThanOrEqual(MAX_ANSWER_CHARS);
  expect(fitted.summary).toBe(big.summary);
  expect(fitted.exitCode).toBe(1);
  expect(String(fitted.text)).toMatch(/\[cut: \d+ more characters, over the client's limit for one result\]$/);
  expect((fitted.keyLines as string[])[1]).toBe('short');
  expect(big.text.length).toBe(60_000); // the original is not changed
  // JSON escapes count: a text of quotes is twice as long as JSON.
  expect(JSON.stringify(fitAnswer({ text: '"'.repeat(30_000) })).length).toBeLessThanOrEqual(MAX_ANSWER_CHARS);
});

test('a result: the same fields as JSON text and as structuredContent, invisible characters named; errors with isError', () => {
  const r = toolResult({ answer: { output: 'a\u200bb' }, userText: 'x' });
  expect(r.isError).toBeUndefined();
  expect(JSON.parse((r.content[0] as { text: string }).text)).toEqual(r.structuredContent);
  expect(JSON.stringify(r.structuredContent)).not.toContain('\u200b');
  const e = toolResult(errorOutcome(new SandboxError('CONTAINER_NOT_FOUND', 'gone', { data: { containerId: 'c' } })));
  expect(e).toMatchObject({ isError: true, structuredContent: { error: 'gone', code: 'CONTAINER_NOT_FOUND', containerId: 'c' } });
  expect(toolResult(errorOutcome(new Error('bug')))).toMatchObject({ isError: true, structuredContent: { code: 'INTERNAL_ERROR' } });
});

test("the client model's answer read as one function call", () => {
  expect(firstJsonObject('Here: ```json\n{"name": "a", "args": {"s": "} {"}}\n```')).toEqual({ name: 'a', args: { s: '} {' } });
  expect(firstJsonObject('{not json} then {"ok": 1}')).toEqual({ ok: 1 });
  expect(firstJsonObject('no object')).toBeUndefined();
  expect(callFromText('{"name": "nextCommand", "args": {"command": "ls"}}', ['nextCommand'])).toEqual([
    { name: 'nextCommand', args: { command: 'ls' } },
  ]);
  expect(callFromText('{"name": "rm", "args": {}}', ['nextCommand'])).toEqual([]);
  expect(callFromText('{"name": "taskComplete"}', ['taskComplete'])).toEqual([{ name: 'taskComplete', args: {} }]);
});
