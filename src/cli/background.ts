import { spawn } from 'node:child_process';
import { closeSync, constants, openSync, readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import type { Config } from '../config/config-schema.js';
import { LANGUAGES } from '../config/languages.js';
import { swallowed } from '../debug.js';
import { displayText } from '../display-text.js';
import { isSandboxError, SandboxError } from '../errors.js';
import { chooseImage } from '../images/golden-images.js';
import { NETWORK_MODES, PROJECT_MOUNTS } from '../policy/policy.js';
import { detectProjectLanguage } from '../project/project-language.js';
import { poll, within } from '../retry.js';
import { processStart } from '../sandbox/labels.js';
import { SandboxManager } from '../sandbox/sandbox-manager.js';
import type { Sandbox } from '../sandbox/sandbox.js';
import { reportFailure, SANDBOX_FAILED_EXIT_CODE } from './format.js';
import { jobsDir, newJobId, pruneRecords, writeRecord, type JobRecord } from './jobs.js';
import type { RunOptions } from './run.js';

/**
 * `run --background`: the command runs under a supervisor, a detached process of its own (the
 * same CLI, a hidden sub-command, in a session of its own, its output to a file in the jobs
 * folder, nothing of the terminal inherited). The supervisor is the container's owner: while
 * it lives, sweeps keep the container; when it ends, however it ends, the container goes with
 * it (its own removal, or the exit hook; after a SIGKILL, the next sweep, as for any owner).
 * The parent hands it the job over an IPC channel (never on a command line, which any user of
 * the machine can read), waits until the container runs or the start failed, then lets go.
 */

const MAIN = fileURLToPath(new URL('./main.js', import.meta.url));
/** The hidden sub-command the supervisor runs as. */
export const SUPERVISOR_COMMAND = 'background-job';
/** How long the parent waits for the start (an image pull included) before giving up on it. */
const START_BOUND_MS = 10 * 60_000;
/** How long a canceled start waits for the supervisor to remove what it made. */
const CANCEL_BOUND_MS = 30_000;
/** How often the supervisor looks at its command. */
const WATCH_INTERVAL_MS = 200;

const JobSpecSchema = z.object({
  id: z.string(),
  argv: z.array(z.string()).min(1),
  configCwd: z.string(),
  options: z.object({
    image: z.string().optional(),
    language: z.enum(LANGUAGES).optional(),
    timeoutMs: z.number().int().positive().optional(),
    network: z.enum(NETWORK_MODES).optional(),
    memoryBytes: z.number().int().positive().optional(),
    project: z.enum(PROJECT_MOUNTS).optional(),
  }),
});
type JobSpec = z.infer<typeof JobSpecSchema>;

/** What the supervisor tells the parent once the container runs, or why it does not. */
type StartAnswer =
  | { ok: true; id: string; container: string; logPath: string; pid: number }
  | { ok: false; error: { error: string; code: string } & Record<string, unknown> };

/** The parent: starts the supervisor, waits for its answer, prints the job id. */
export async function runBackground(
  config: Config,
  configCwd: string,
  argv: string[],
  options: RunOptions,
  out: (line: string) => void,
  err: (line: string) => void,
): Promise<number> {
  const dir = jobsDir(config.logs.dir);
  pruneRecords(dir, config.logs.maxAgeDays * 24 * 3600_000);
  const id = newJobId();
  const outFd = openSync(join(dir, `${id}.out`), constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
  const { json: _json, ...startOptions } = options;
  const spec: JobSpec = { id, argv, configCwd, options: startOptions };
  const child = spawn(process.execPath, [MAIN, SUPERVISOR_COMMAND], {
    detached: true,
    stdio: ['ignore', outFd, outFd, 'ipc'],
    env: process.env,
  });
  closeSync(outFd);
  const exited = new Promise<StartAnswer>((resolve) => {
    child.once('exit', () => resolve(supervisorDied(dir, id)));
    // Not started at all, or its channel broke before the job was handed over.
    child.once('error', () => resolve(supervisorDied(dir, id)));
  });
  // The message comes from the supervisor this process just started (superviseJob's `tell`).
  const answered = new Promise<StartAnswer>((resolve) => child.once('message', (m) => resolve(m as StartAnswer)));
  // A Ctrl-C while it starts: the supervisor stops the start and removes what it made.
  let interrupted = false;
  const onSigint = () => {
    interrupted = true;
    child.kill('SIGTERM');
  };
  process.on('SIGINT', onSigint);
  try {
    child.send(spec, (e) => {
      if (e) swallowed('handing a job to its supervisor', e);
    });
    const answer = await within(Promise.race([answered, exited]), START_BOUND_MS);
    if (interrupted) {
      // Whatever it had answered: canceled, and said only once the supervisor has removed what it made.
      const ended = await within(exited, CANCEL_BOUND_MS);
      err(
        ended
          ? 'canceled: the background job was stopped and its container removed'
          : `canceled: the supervisor (pid ${child.pid}) did not end within ${CANCEL_BOUND_MS / 1000} s; \`genaicode-docker ps\` shows what is left`,
      );
      return 130;
    }
    if (!answer) {
      child.kill('SIGTERM');
      return reportFailure(
        new SandboxError(
          'CONTAINER_START_FAILED',
          `The background job did not start within ${START_BOUND_MS / 60_000} minutes: it was stopped.`,
        ),
        options.json,
        out,
        err,
      );
    }
    if (!answer.value.ok) {
      // The supervisor's error as `run` reports one: the structured error with --json, else a sentence.
      const e = answer.value.error;
      if (options.json) out(JSON.stringify(e));
      else err(displayText(`${e.code}: ${e.error}`, 4000));
      return SANDBOX_FAILED_EXIT_CODE;
    }
    const a = answer.value;
    // The id alone on stdout (`id=$(genaicode-docker run --background ...)`); how to use it on stderr.
    out(options.json ? JSON.stringify({ id: a.id, container: a.container, logPath: a.logPath, pid: a.pid }) : a.id);
    if (!options.json)
      err(
        `started in ${a.container}; see it with \`genaicode-docker ps\`, its output with \`genaicode-docker logs ${a.id}\`, stop it with \`genaicode-docker kill ${a.id}\``,
      );
    return 0;
  } finally {
    process.removeListener('SIGINT', onSigint);
    if (child.connected) child.disconnect();
    child.unref();
  }
}

/** A supervisor that ended before answering: what it printed says why. */
function supervisorDied(dir: string, id: string): StartAnswer {
  let said = '';
  try {
    said = readFileSync(join(dir, `${id}.out`), 'utf8')
      .trim()
      .split('\n')
      .slice(-3)
      .join(' ');
  } catch (e) {
    swallowed('reading a supervisor output', e);
  }
  return {
    ok: false,
    error: {
      code: 'CONTAINER_START_FAILED',
      error: `The background job's supervisor ended before the container ran${said ? `: ${said}` : '.'}`,
    },
  };
}

/** The spec the parent sends first, bounded: a supervisor nobody talks to ends. */
async function receiveSpec(): Promise<JobSpec> {
  if (!process.send)
    throw new SandboxError('INVALID_ARGUMENT', 'This sub-command is the supervisor `run --background` starts: it is not run by hand.');
  const message = new Promise<unknown>((resolve) => process.once('message', resolve));
  const got = await within(message, 30_000);
  if (!got) throw new SandboxError('INVALID_ARGUMENT', 'No job was handed to this supervisor (it is started by `run --background`).');
  return JobSpecSchema.parse(got.value);
}

function tell(answer: StartAnswer): void {
  if (!process.connected) return;
  process.send?.(answer);
  process.disconnect();
}

/**
 * The supervisor: starts the sandbox as `run` does, runs the command as a background process
 * of it (its log open at once, its whole tree stopped and verified on a kill), waits for its
 * end, its timeout (by default the container's expiry), or SIGTERM/SIGINT/SIGHUP, then
 * removes the container and records how the job ended. Returns its own exit code.
 */
export async function superviseJob(loadConfigAt: (cwd: string) => Config): Promise<number> {
  const abort = new AbortController();
  const onSignal = () => abort.abort();
  // Listening ourselves: the exit hook then leaves the first signal to us (and still removes
  // whatever is left when the process exits).
  for (const sig of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) process.on(sig, onSignal);
  let spec: JobSpec;
  let config: Config;
  let dir: string;
  try {
    spec = await receiveSpec();
    config = loadConfigAt(spec.configCwd);
    dir = jobsDir(config.logs.dir);
  } catch (e) {
    // Nothing started: the parent hears why (the open channel would otherwise keep this process alive).
    tell({ ok: false, error: isSandboxError(e) ? e.toJSON() : { error: String(e), code: 'INTERNAL_ERROR' } });
    throw e;
  }
  const start = processStart(process.pid);
  let record: JobRecord = {
    id: spec.id,
    host: hostname(),
    pid: process.pid,
    ...(start ? { pidStart: start } : {}),
    command: spec.argv.length === 1 ? spec.argv[0]! : spec.argv.join(' '),
    started: new Date().toISOString(),
    state: 'starting',
  };
  writeRecord(dir, record);
  const manager = new SandboxManager({ config });
  try {
    const sandbox = await startSandbox(manager, config, spec, abort.signal);
    const command = spec.argv.length === 1 ? spec.argv[0]! : spec.argv;
    const started = await sandbox.startProcess(command);
    // Nobody types into a job: its input ends at once, as `run`'s does.
    if (started.status === 'running') sandbox.writeProcessInput(started.processId, '', true);
    record = {
      ...record,
      state: 'running',
      image: sandbox.info.image,
      container: { id: sandbox.id, name: sandbox.name },
      expiresAt: sandbox.info.expiresAt.toISOString(),
      logPath: started.logPath,
    };
    writeRecord(dir, record);
    tell({ ok: true, id: spec.id, container: sandbox.name, logPath: started.logPath, pid: process.pid });
    const end = await watch(sandbox, started.processId, spec.options.timeoutMs, abort.signal);
    await sandbox.stop().catch((e: unknown) => swallowed(`removing ${sandbox.name}`, e));
    record = { ...record, state: 'ended', ...end, ended: new Date().toISOString() };
  } catch (e) {
    const error = isSandboxError(e) ? e.toJSON() : { error: String(e), code: 'INTERNAL_ERROR' };
    tell({ ok: false, error });
    process.stderr.write(`${displayText(`${error.code}: ${error.error}`, 4000)}\n`);
    record = {
      ...record,
      state: 'failed',
      reason: 'failed',
      error: { code: error.code, message: error.error },
      ended: new Date().toISOString(),
    };
  } finally {
    await manager.stopAll();
  }
  // Written once the container is gone: `kill` waits for this.
  writeRecord(dir, record);
  return record.state === 'ended' ? 0 : 1;
}

async function startSandbox(manager: SandboxManager, config: Config, spec: JobSpec, signal: AbortSignal): Promise<Sandbox> {
  const o = spec.options;
  const choice = await chooseImage(
    config,
    manager.engine,
    { image: o.image, language: o.language },
    o.image === undefined && o.language === undefined ? detectProjectLanguage(config.projectRoot) : undefined,
  );
  return manager.start({
    image: choice.image,
    name: `${config.containerPrefix}${spec.id}`,
    ...(o.network ? { network: o.network } : {}),
    ...(o.memoryBytes !== undefined ? { memoryBytes: o.memoryBytes } : {}),
    ...(o.project ? { project: o.project } : {}),
    signal,
  });
}

/** Waits for the command's end, its timeout (the container's expiry at the latest) or a signal; stops it unless it ended. */
async function watch(
  sandbox: Sandbox,
  processId: string,
  timeoutMs: number | undefined,
  signal: AbortSignal,
): Promise<Pick<JobRecord, 'exitCode' | 'reason'>> {
  const untilExpiry = Math.max(0, sandbox.info.expiresAt.getTime() - Date.now());
  const bound = Math.min(timeoutMs ?? Infinity, untilExpiry);
  const seen = await poll(
    () => {
      if (signal.aborted) return 'killed' as const;
      const p = sandbox.listProcesses().find((x) => x.processId === processId);
      return p && p.status === 'running' ? undefined : ('ended' as const);
    },
    { timeoutMs: bound, intervalMs: WATCH_INTERVAL_MS },
  );
  if (seen !== 'ended') {
    await sandbox.stopProcess(processId).catch((e: unknown) => swallowed(`stopping job process ${processId}`, e));
  }
  const info = sandbox.listProcesses().find((x) => x.processId === processId);
  const exitCode = info?.exitCode ?? null;
  if (seen === 'killed') return { exitCode, reason: 'killed' };
  if (seen === undefined) return { exitCode, reason: bound === untilExpiry ? 'expired' : 'timed out' };
  return { exitCode, reason: exitCode === null ? 'container gone' : 'exited' };
}
