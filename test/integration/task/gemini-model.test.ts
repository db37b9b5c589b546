/**
 * The Gemini adapter of the task model port, against a local fake of the Gemini REST API
 * (127.0.0.1, random port; no traffic leaves the machine). Checks the exact request the
 * SDK sends for our calls, how the answer is read, and how failures and aborts surface.
 */
import { getEventListeners } from 'node:events';
import { DEFAULT_GEMINI_STEP_MODEL, DEFAULT_GEMINI_SUMMARY_MODEL, GeminiTaskModel } from '../../../src/task/gemini-model.js';
import { STEP_FUNCTIONS, TASK_SUMMARY_DEF, type ModelRequest } from '../../../src/task/task-model.js';
import { FakeGeminiServer, functionCallResponse, type FakeReply, type RecordedRequest } from '../fixtures/gemini-fake/server.js';

const STEP_REQUEST: ModelRequest = {
  system: 'You are an expert system operator inside a Docker container.',
  prompt: 'Overall Task:\nlist the files\n\nNext command:',
  functions: STEP_FUNCTIONS,
};

const SUMMARY_REQUEST: ModelRequest = {
  system: 'You write the outcome of a task run.',
  prompt: 'Based on the following task description and the full command log, provide a concise summary of the outcome.',
  functions: [TASK_SUMMARY_DEF],
};

let server: FakeGeminiServer;
let reply: (req: RecordedRequest) => FakeReply = () => ({ body: functionCallResponse([{ name: 'nextCommand', args: { command: 'ls' } }]) });

beforeAll(async () => {
  server = await FakeGeminiServer.start((req) => reply(req));
});
afterAll(async () => {
  await server.close();
});
beforeEach(() => {
  server.requests.length = 0;
  reply = () => ({ body: functionCallResponse([{ name: 'nextCommand', args: { command: 'ls' } }]) });
});

function model(over: Partial<ConstructorParameters<typeof GeminiTaskModel>[0]> = {}): GeminiTaskModel {
  // A short per-request timeout: the SDK's timer for it is never cleared, and would hold the process.
  return new GeminiTaskModel({ apiKey: 'test-key-123', baseUrl: server.baseUrl, timeoutMs: 10_000, ...over });
}

function only(): RecordedRequest {
  expect(server.requests).toHaveLength(1);
  return server.requests[0]!;
}

describe('the request', () => {
  test('a step call: POST /v1beta/models/<step model>:generateContent with key, system text, tools, mode ANY and the prompt', async () => {
    const calls = await model().call('step', STEP_REQUEST);
    expect(calls).toEqual([{ name: 'nextCommand', args: { command: 'ls' } }]);

    const req = only();
    expect(req.method).toBe('POST');
    expect(req.path).toBe(`/v1beta/models/${DEFAULT_GEMINI_STEP_MODEL}:generateContent`);
    expect(DEFAULT_GEMINI_STEP_MODEL).toBe('gemini-2.5-flash');
    expect(req.headers['x-goog-api-key']).toBe('test-key-123');
    expect(req.headers['content-type']).toBe('application/json');
    const body = req.body!;
    expect(body).toBeDefined();
    expect(body.systemInstruction?.parts.map((p) => p.text)).toEqual([STEP_REQUEST.system]);
    expect(body.contents).toEqual([{ role: 'user', parts: [{ text: STEP_REQUEST.prompt }] }]);
    expect(req.prompt).toBe(STEP_REQUEST.prompt);

    expect(body.tools).toHaveLength(1);
    const decls = body.tools![0]!.functionDeclarations!;
    expect(decls.map((d) => d.name)).toEqual(['nextCommand', 'taskComplete', 'taskFailed']);
    const [next, complete, failed] = decls;
    expect(next!.description).toBe(STEP_FUNCTIONS[0]!.description);
    expect(next!.parameters).toEqual({
      type: 'object',
      properties: {
        command: { type: 'string', description: 'the shell command line' },
        reasoning: { type: 'string', description: 'one sentence: why this command' },
      },
      required: ['command'],
    });
    // An empty required list is rejected by the real API: it must be left out.
    expect(complete!.parameters).toEqual({ type: 'object', properties: { summary: { type: 'string', description: 'what was achieved' } } });
    expect(complete!.parameters).not.toHaveProperty('required');
    expect(failed!.parameters).toMatchObject({ required: ['reason'] });

    expect(body.toolConfig?.functionCallingConfig?.mode).toBe('ANY');
    expect(body.toolConfig?.functionCallingConfig?.allowedFunctionNames).toEqual(['nextCommand', 'taskComplete', 'taskFailed']);
  });

  test('a summary call goes to the summary model with the taskSummary function only', async () => {
    reply = () => ({ body: functionCallResponse([{ name: 'taskSummary', args: { summary: 'it worked' } }]) });
    const calls = await model().call('summary', SUMMARY_REQUEST);
    expect(calls).toEqual([{ name: 'taskSummary', args: { summary: 'it worked' } }]);
    const req = only();
    expect(req.path).toBe(`/v1beta/models/${DEFAULT_GEMINI_SUMMARY_MODEL}:generateContent`);
    expect(DEFAULT_GEMINI_SUMMARY_MODEL).toBe('gemini-2.5-pro');
    expect(req.body!.tools![0]!.functionDeclarations!.map((d) => d.name)).toEqual(['taskSummary']);
    expect(req.body!.toolConfig?.functionCallingConfig?.mode).toBe('ANY');
    expect(req.body!.systemInstruction?.parts[0]?.text).toBe(SUMMARY_REQUEST.system);
    expect(req.prompt).toBe(SUMMARY_REQUEST.prompt);
  });

  test('custom model names per tier', async () => {
    const m = model({ stepModel: 'my-flash-lite', summaryModel: 'my-pro' });
    await m.call('step', STEP_REQUEST);
    await m.call('summary', SUMMARY_REQUEST);
    expect(server.requests.map((r) => r.model)).toEqual(['my-flash-lite', 'my-pro']);
  });
});

describe('the answer', () => {
  test('the example response is read as one nextCommand call', async () => {
    reply = () => ({
      body: {
        candidates: [
          { content: { role: 'model', parts: [{ functionCall: { name: 'nextCommand', args: { command: 'ls' } } }] }, finishReason: 'STOP' },
        ],
      },
    });
    await expect(model().call('step', STEP_REQUEST)).resolves.toEqual([{ name: 'nextCommand', args: { command: 'ls' } }]);
  });

  test('several calls keep their order; text parts are skipped; missing args become {}', async () => {
    reply = () => ({
      body: {
        candidates: [
          {
            content: {
              role: 'model',
              parts: [
                { text: 'thinking...' },
                { functionCall: { name: 'nextCommand', args: { command: 'pwd', reasoning: 'where am I' } } },
                { functionCall: { name: 'taskComplete' } },
              ],
            },
            finishReason: 'STOP',
          },
        ],
      },
    });
    await expect(model().call('step', STEP_REQUEST)).resolves.toEqual([
      { name: 'nextCommand', args: { command: 'pwd', reasoning: 'where am I' } },
      { name: 'taskComplete', args: {} },
    ]);
  });

  test('a text-only answer is no call (the loop then reports the invalid answer)', async () => {
    reply = () => ({ body: { candidates: [{ content: { role: 'model', parts: [{ text: 'TASK_COMPLETE' }] }, finishReason: 'STOP' }] } });
    await expect(model().call('step', STEP_REQUEST)).resolves.toEqual([]);
  });
});

describe('failures surface as thrown errors', () => {
  test('HTTP 500 with an error body', async () => {
    reply = () => ({ status: 500, body: { error: { code: 500, message: 'Internal error encountered.', status: 'INTERNAL' } } });
    await expect(model().call('step', STEP_REQUEST)).rejects.toThrow(/500.*Internal error encountered\./);
    expect(server.requests).toHaveLength(1);
  });

  test('HTTP 429 (quota)', async () => {
    reply = () => ({ status: 429, body: { error: { code: 429, message: 'Resource has been exhausted', status: 'RESOURCE_EXHAUSTED' } } });
    await expect(model().call('summary', SUMMARY_REQUEST)).rejects.toThrow(/429.*Resource has been exhausted/);
  });

  test('a 200 with a body that is not JSON', async () => {
    reply = () => ({ status: 200, body: '<html>not json', raw: true });
    await expect(model().call('step', STEP_REQUEST)).rejects.toThrow();
  });

  test('a blocked answer (finishReason SAFETY)', async () => {
    reply = () => ({
      body: {
        candidates: [
          {
            content: { role: 'model', parts: [{ functionCall: { name: 'nextCommand', args: { command: 'rm -rf /' } } }] },
            finishReason: 'SAFETY',
          },
        ],
      },
    });
    await expect(model().call('step', STEP_REQUEST)).rejects.toThrow(/SAFETY/);
  });
});

describe('cancellation', () => {
  test('aborting the signal cancels the pending request: the call rejects at once and the connection closes', async () => {
    reply = () => 'hang';
    const abort = new AbortController();
    const started = performance.now();
    const pending = model().call('step', STEP_REQUEST, abort.signal);
    const settled = pending.then(
      () => 'resolved',
      (e: unknown) => e,
    );
    await server.waitForRequests(1);
    abort.abort();
    const outcome = await settled;
    expect(outcome).toBeInstanceOf(Error);
    expect((outcome as Error).message).toMatch(/abort/i);
    expect(performance.now() - started).toBeLessThan(5_000);
    // The server sees the client go away.
    for (let i = 0; i < 50 && !server.requests[0]!.clientClosed; i++) await new Promise((r) => setTimeout(r, 20));
    expect(server.requests[0]!.clientClosed).toBe(true);
  });

  test('a finished call leaves no timer running (it would keep a CLI process alive until it fires)', async () => {
    const timers = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
    const m = model();
    await m.call('step', STEP_REQUEST); // warm up whatever the HTTP client keeps
    await new Promise((r) => setImmediate(r));
    const before = timers();
    await m.call('step', STEP_REQUEST);
    await m.call('step', STEP_REQUEST);
    await new Promise((r) => setImmediate(r));
    const after = timers();
    // The SDK arms setTimeout(abort, timeout) per request and never clears it when the request ends.
    expect(after - before).toBe(0);
  });

  test('calls that share one signal (one per task) leave no abort listener on it', async () => {
    const m = model();
    const abort = new AbortController();
    for (let i = 0; i < 3; i++) await m.call('step', STEP_REQUEST, abort.signal);
    // Left on the signal, they pile up over a task: Node warns at 11 (MaxListenersExceededWarning).
    expect(getEventListeners(abort.signal, 'abort')).toHaveLength(0);
  });

  test('the per-request timeout ends a request that never answers', async () => {
    reply = () => 'hang';
    const started = performance.now();
    await expect(model({ timeoutMs: 300 }).call('step', STEP_REQUEST)).rejects.toThrow(/abort/i);
    expect(performance.now() - started).toBeLessThan(5_000);
  });
});
