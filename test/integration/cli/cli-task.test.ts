/**
 * `genaicode-docker task` end to end: the built CLI, a real engine, and a local fake of
 * the Gemini REST API (GEMINI_BASE_URL; nothing leaves the machine) scripted to write a
 * file, run a failing command, recover, complete, and answer the summary call.
 */
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join, sep } from 'node:path';
import type { FunctionCall } from '../../../src/prompt/host/genaicode-types.js';
import { LABEL } from '../../../src/sandbox/labels.js';
import { CLI, requireBuiltPackage } from '../../support/built-package.js';
import { docker, listManaged, requireEngine } from '../../support/engine.js';
import { tempDir, removeTempDirs } from '../../support/temp-dirs.js';
import { FakeGeminiServer, functionCallResponse, type FakeReply, type RecordedRequest } from '../fixtures/gemini-fake/server.js';

const STEP_MODEL = 'gemini-2.5-flash';
const SUMMARY_MODEL = 'gemini-2.5-pro';

interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
  /** performance.now() when the process exited. */
  exitedAt: number;
  durationMs: number;
}

/** The environment of this process without anything that would change the CLI's config or model. */
function cleanEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (k.startsWith('GENAICODE_DOCKER_') || k.startsWith('GEMINI_') || k === 'GOOGLE_API_KEY' || k === 'NODE_OPTIONS') continue;
    env[k] = v;
  }
  return { ...env, ...extra };
}

function runCli(args: string[], env: NodeJS.ProcessEnv, cwd: string, timeoutMs = 150_000): Promise<CliRun> {
  return new Promise((resolveRun, rejectRun) => {
    const started = performance.now();
    const child = spawn(process.execPath, [CLI, ...args], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString('utf8')));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
    const killer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', rejectRun);
    child.on('close', (code) => {
      clearTimeout(killer);
      const exitedAt = performance.now();
      resolveRun({ code, stdout, stderr, exitedAt, durationMs: Math.round(exitedAt - started) });
    });
  });
}

const step = (calls: FunctionCall[]): FakeReply => ({ body: functionCallResponse(calls) });
const SUMMARY_TEXT = 'Wrote hello.txt; a first read of the misspelled hello.text failed with exit 1, the second read printed the greeting.';

let server: FakeGeminiServer;
let answeredAt = 0;
let main: CliRun;
let workDir: string;
let stateDir: string;

beforeAll(async () => {
  await requireEngine();
  requireBuiltPackage(CLI);
  const stepAnswers: FakeReply[] = [
    step([{ name: 'nextCommand', args: { command: "echo 'hello from the task' > hello.txt", reasoning: 'write the file first' } }]),
    step([{ name: 'nextCommand', args: { command: 'cat hello.text', reasoning: 'read it back' } }]),
    step([{ name: 'nextCommand', args: { command: 'cat hello.txt', reasoning: 'the file is hello.txt, not hello.text' } }]),
    step([{ name: 'taskComplete', args: { summary: 'hello.txt written and read back' } }]),
  ];
  const summaryAnswers: FakeReply[] = [step([{ name: 'taskSummary', args: { summary: SUMMARY_TEXT } }])];
  server = await FakeGeminiServer.start((req: RecordedRequest) => {
    answeredAt = performance.now();
    const queue = req.model === STEP_MODEL ? stepAnswers : req.model === SUMMARY_MODEL ? summaryAnswers : undefined;
    const next = queue?.shift();
    if (!next)
      return {
        status: 400,
        body: { error: { code: 400, message: `fake Gemini: no scripted answer left for model ${req.model}`, status: 'INVALID_ARGUMENT' } },
      };
    return next;
  });
  workDir = tempDir('gcd-cli-task-');
  stateDir = tempDir('gcd-cli-state-');
  main = await runCli(
    ['task', '--network', 'none', '--max-commands', '10', 'Write', 'hello from the task', 'to hello.txt', 'and', 'read it back'],
    cleanEnv({ GEMINI_API_KEY: 'test', GEMINI_BASE_URL: server.baseUrl, XDG_STATE_HOME: stateDir }),
    workDir,
  );
}, 400_000);

afterAll(async () => {
  await server?.close();
  removeTempDirs();
});

function logPath(): string {
  const m = /full log: (.+)$/m.exec(main.stdout);
  if (!m) throw new Error(`no "full log:" line in stdout:\n${main.stdout}\n--- stderr:\n${main.stderr}`);
  return m[1]!.trim();
}

describe('genaicode-docker task on a scripted Gemini', () => {
  test('exits 0 and prints SUCCESS, the command count, the summary and the log path', () => {
    expect({ code: main.code, stderr: main.stderr }).toEqual({ code: 0, stderr: expect.any(String) });
    expect(main.stdout).toMatch(/^SUCCESS after 3 commands\n/);
    expect(main.stdout).toContain(SUMMARY_TEXT);
    expect(main.stdout).toContain('The task was completed.');
    expect(logPath()).toMatch(/\.log$/);
  });

  test('stderr shows the sandbox, then each command with its exit code', () => {
    const lines = main.stderr.split('\n');
    expect(lines[0]).toMatch(/^task in genaicode-docker-\S+ \(genaicode-docker\/sandbox-minimal:latest, network none\)$/);
    const progress = lines.filter((l) => /^\[\d+\] \$ /.test(l));
    expect(progress).toHaveLength(3);
    expect(progress[0]).toMatch(/^\[1\] \$ echo 'hello from the task' > hello\.txt -> exit 0 in \d+ ms$/);
    expect(progress[1]).toMatch(/^\[2\] \$ cat hello\.text -> exit 1 in \d+ ms$/);
    expect(progress[2]).toMatch(/^\[3\] \$ cat hello\.txt -> exit 0 in \d+ ms$/);
    expect(lines).toContain('[1] write the file first');
    expect(lines).toContain('[3] the file is hello.txt, not hello.text');
  });

  test('the fake Gemini got 4 step calls and 1 summary call, with the key, and the failure in the next prompt', () => {
    expect(server.requests.map((r) => r.model)).toEqual([STEP_MODEL, STEP_MODEL, STEP_MODEL, STEP_MODEL, SUMMARY_MODEL]);
    for (const r of server.requests) {
      expect(r.method).toBe('POST');
      expect(r.headers['x-goog-api-key']).toBe('test');
      expect(r.body?.toolConfig?.functionCallingConfig?.mode).toBe('ANY');
    }
    expect(server.requests[0]!.prompt).toContain('Overall Task:\nWrite hello from the task to hello.txt and read it back');
    expect(server.requests[2]!.prompt).toMatch(
      /#2 \$ cat hello\.text\n\[stderr\]\ncat: can't open 'hello\.text': No such file or directory\n-> exit 1/,
    );
    expect(server.requests[3]!.prompt).toContain('#3 $ cat hello.txt\nhello from the task\n-> exit 0');
    expect(server.requests[4]!.prompt).toContain('Based on the following task description and the full command log');
    expect(server.requests[4]!.body?.tools?.[0]?.functionDeclarations?.map((d) => d.name)).toEqual(['taskSummary']);
  });

  test('the task log exists in the user\u2019s state folder (not the working directory) and holds the commands, outputs and summary', () => {
    const path = logPath();
    expect(path.startsWith(join(stateDir, 'genaicode-docker', 'logs') + sep)).toBe(true);
    expect(path.startsWith(workDir + sep)).toBe(false);
    expect(existsSync(path)).toBe(true);
    const log = readFileSync(path, 'utf8');
    expect(log).toContain("$ echo 'hello from the task' > hello.txt");
    expect(log).toContain("$ cat hello.text\ncat: can't open 'hello.text': No such file or directory");
    expect(log).toContain('$ cat hello.txt\nhello from the task\n');
    expect(log).toContain(`# Summary (model)\nThe task was completed. ${SUMMARY_TEXT}`);
  });

  test('no managed container of the run is left', async () => {
    const sessionId = /logs\/([^/]+)\/[^/]+\.log$/.exec(logPath())?.[1];
    expect(sessionId).toBeDefined();
    const name = /^task in (\S+) /.exec(main.stderr)?.[1];
    expect(name).toBeDefined();
    expect(await listManaged({ [LABEL.session]: sessionId! })).toEqual([]);
    const byName = await docker(['ps', '-a', '-q', '--filter', `name=^/${name!}$`, '--filter', `label=${LABEL.managed}=true`]);
    expect(byName.code).toBe(0);
    expect(byName.stdout.trim()).toBe('');
  });

  test('the process exits promptly once the task is done (nothing left holding it open)', () => {
    // From the fake's last answer (the summary) to the exit: stopping the container takes ~1-2 s.
    const lingerMs = Math.round(main.exitedAt - answeredAt);
    expect({ lingerMs, totalMs: main.durationMs, within: lingerMs < 15_000 }).toEqual({ lingerMs, totalMs: main.durationMs, within: true });
  });
});

describe('without an API key', () => {
  test('exits 2 with a message that names GEMINI_API_KEY, and starts nothing', async () => {
    const before = server.requests.length;
    const r = await runCli(['task', 'list', 'the', 'files'], cleanEnv({}), tempDir('gcd-cli-nokey-'), 30_000);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('GEMINI_API_KEY');
    expect(r.stdout).toBe('');
    expect(r.stderr).not.toMatch(/^task in /m);
    expect(server.requests.length).toBe(before);
  });
});

describe('--project', () => {
  test('the task runs in the project, mounted read-only at the working folder as the plugin mounts it', async () => {
    const project = tempDir('gcd-cli-task-project-');
    writeFileSync(join(project, 'VERSION'), '4.2.0\n');
    const answers: FakeReply[] = [
      step([{ name: 'nextCommand', args: { command: 'cat VERSION; touch made-here', reasoning: 'read the version' } }]),
      step([{ name: 'taskComplete', args: { summary: 'the version is 4.2.0' } }]),
    ];
    const summary: FakeReply[] = [step([{ name: 'taskSummary', args: { summary: 'The project is at version 4.2.0.' } }])];
    const fake = await FakeGeminiServer.start((req: RecordedRequest) => {
      const next = (req.model === STEP_MODEL ? answers : summary).shift();
      return next ?? { status: 400, body: { error: { code: 400, message: 'no scripted answer left', status: 'INVALID_ARGUMENT' } } };
    });
    try {
      const r = await runCli(
        ['task', '--project', 'ro', '--network', 'none', '--max-commands', '4', 'Which', 'version', 'is', 'the', 'project?'],
        cleanEnv({ GEMINI_API_KEY: 'test', GEMINI_BASE_URL: fake.baseUrl, XDG_STATE_HOME: tempDir('gcd-cli-state-') }),
        project,
      );
      expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: expect.any(String) });
      expect(r.stderr.split('\n')[0]).toMatch(/^task in genaicode-docker-\S+ \(\S+, network none, project ro at \/workspace\)$/);
      // The model is told the working folder is the project, and sees the file and the refused write.
      expect(fake.requests[0]!.prompt).toContain('working directory /workspace; the project read-only at /workspace');
      expect(fake.requests[1]!.prompt).toMatch(
        /#1 \$ cat VERSION; touch made-here\n4\.2\.0\n\[stderr\]\ntouch: made-here: Read-only file system/,
      );
      expect(existsSync(join(project, 'made-here'))).toBe(false);
    } finally {
      await fake.close();
    }
  }, 200_000);
});
