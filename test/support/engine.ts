/**
 * Shared support for the integration tests: they run against a real container engine and
 * fail (never skip) without one. The engine is observed through the docker CLI, not through
 * the code under test, so a bug in the adapter cannot hide itself.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  DockerEngine,
  LABEL,
  SandboxManager,
  type Sandbox,
  type Config,
  type ConfigInput,
  type ContainerEngine,
  type ContainerSpec,
  type ContainerState,
  type ContainerSummary,
  type EngineInfo,
  type ExecSession,
  type ExecSpec,
  type ImageInfo,
  type PathStat,
  type PullOptions,
  type PullProgress,
  type StreamId,
} from '../../src/index.js';
import { removeTempDirs, testConfig } from './temp-dirs.js';

export const MINIMAL_IMAGE = 'genaicode-docker/sandbox-minimal:latest';
export const PYTHON_IMAGE = 'genaicode-docker/sandbox-python:latest';
/** The engine's init as process 1, with the keep-alive it runs: Docker's docker-init, or Podman's. */
export const INIT_COMMAND = /^(\/sbin\/docker-init|\/run\/podman-init) -- sleep \d+$/;
/** The kept shell's command line (commands/kept-shell.ts): one per container that has run a command, with exec.keptShell on. */
export const KEPT_SHELL_COMMAND = /^\/bin\/sh -c : kept-shell\s/;

/**
 * Which engine the integration suite runs against: GENAICODE_DOCKER_TEST_ENGINE=podman with
 * DOCKER_HOST at Podman's socket (scripts/engine/podman.sh), else Docker. requireEngine checks
 * that the engine answering is that one; a test asserts a Docker-only shape (its events, its
 * volumes) only on Docker, and the behaviour on both.
 */
export const TEST_ENGINE = testEngine(process.env.GENAICODE_DOCKER_TEST_ENGINE);

function testEngine(value: string | undefined): 'docker' | 'podman' {
  if (value === undefined || value === '' || value === 'docker') return 'docker';
  if (value === 'podman') return 'podman';
  throw new Error(`GENAICODE_DOCKER_TEST_ENGINE=${value}: expected docker or podman.`);
}

/** Where the docker CLI (and DockerEngine with no settings) talks to. */
export function engineEndpoint(): string {
  return process.env.DOCKER_HOST || 'unix:///var/run/docker.sock';
}

export interface DockerCliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs the docker CLI; never throws for a non-zero exit (the caller decides). */
export function docker(args: string[], options: { timeoutMs?: number; input?: string } = {}): Promise<DockerCliResult> {
  return new Promise((resolve, reject) => {
    const child = execFile(
      'docker',
      args,
      { timeout: options.timeoutMs ?? 60_000, maxBuffer: 64 * 1024 * 1024, encoding: 'utf8' },
      (error, stdout, stderr) => {
        if (error && (error as NodeJS.ErrnoException).code === 'ENOENT') {
          reject(new Error('The docker CLI is not installed (the integration tests observe the engine through it).'));
          return;
        }
        const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
        resolve({ code, stdout, stderr });
      },
    );
    if (options.input !== undefined) child.stdin?.end(options.input);
  });
}

/** Like docker(), but a non-zero exit is an error carrying the CLI's stderr. */
export async function dockerOk(args: string[], options: { timeoutMs?: number } = {}): Promise<string> {
  const r = await docker(args, options);
  if (r.code !== 0) throw new Error(`docker ${args.join(' ')} failed (${r.code}): ${r.stderr.trim()}`);
  return r.stdout;
}

/**
 * Fails with a message that says how to get an engine. Use in a `beforeAll` of every
 * integration file: a test that needs Docker must never pass silently without it.
 */
export async function requireEngine(): Promise<void> {
  const endpoint = engineEndpoint();
  let reason: string;
  try {
    const r = await docker(['version', '--format', '{{.Server.Version}} {{json .Server.Components}}'], { timeoutMs: 15_000 });
    if (r.code === 0 && r.stdout.trim() !== '') {
      const podman = /podman/i.test(r.stdout);
      if (podman !== (TEST_ENGINE === 'podman')) {
        throw new Error(
          `The engine at ${endpoint} is ${podman ? 'Podman' : 'not Podman'}, but GENAICODE_DOCKER_TEST_ENGINE says ${TEST_ENGINE}: ` +
            'set both (eval "$(bash scripts/engine/podman.sh start)" and GENAICODE_DOCKER_TEST_ENGINE=podman), or neither.',
        );
      }
      for (const image of [MINIMAL_IMAGE, PYTHON_IMAGE]) {
        const i = await docker(['image', 'inspect', '--format', '{{.Id}}', image]);
        if (i.code !== 0) {
          throw new Error(`The engine at ${endpoint} has no image ${image}: build the test images with \`bash scripts/setup.sh --test\`.`);
        }
      }
      return;
    }
    reason = (r.stderr || r.stdout).trim().split('\n').pop() ?? `exit ${r.code}`;
  } catch (e) {
    if (e instanceof Error && /has no image|GENAICODE_DOCKER_TEST_ENGINE says/.test(e.message)) throw e;
    reason = e instanceof Error ? e.message : String(e);
  }
  throw new Error(
    `No Docker engine answers at ${endpoint}: start one with \`bash scripts/ensure-engine.sh\` (root) or \`sudo systemctl start docker\`, or set DOCKER_HOST. (${reason})`,
  );
}

// ---------------------------------------------------------------------------------------
// Sessions, configs and managers. Jest gives every test file its own module registry, so
// this module-level state is per file.

let fileSessionId: string | undefined;

/**
 * The session prefix of one test file. Every manager of the file gets its own session id
 * under it (`<prefix>-<random>`): default container names derive from the session id, so
 * two managers may not share one.
 */
export function fileSession(name: string): string {
  fileSessionId = `it-${name}-${randomBytes(3).toString('hex')}`;
  return fileSessionId;
}

export function currentSession(): string {
  if (!fileSessionId) throw new Error('Call fileSession(name) at the top of the test file first.');
  return fileSessionId;
}

/**
 * The preamble of an integration file: its session prefix, an engine required before any
 * test (a test that needs Docker fails without one, never skips), and after all tests its
 * temporary folders removed and no container of its sessions left. `afterAll` runs first
 * (to release a shared sandbox, say).
 */
export function engineSuite(name: string, hooks: { afterAll?: () => Promise<unknown> | unknown } = {}): void {
  fileSession(name);
  beforeAll(requireEngine);
  afterAll(async () => {
    await hooks.afterAll?.();
    removeTempDirs();
    await expectNoContainersLeft();
  });
}

/** A new session id under this file's prefix. */
export function newTestSessionId(): string {
  return `${currentSession()}-${randomBytes(3).toString('hex')}`;
}

export interface WithManagerOptions {
  config?: Config;
  overrides?: ConfigInput;
  engine?: ContainerEngine;
  sessionId?: string;
}

/**
 * Runs `fn` with a manager (no start-up sweep: tests of other files run at the same time,
 * and the sweep tests must see exactly what they set up) and always stops all of its
 * sandboxes afterwards, whatever `fn` did.
 */
export async function withManager<T>(
  fn: (manager: SandboxManager, config: Config) => Promise<T>,
  options: WithManagerOptions = {},
): Promise<T> {
  const config = options.config ?? testConfig(options.overrides);
  const manager = new SandboxManager({
    config,
    sessionId: options.sessionId ?? newTestSessionId(),
    sweepOnStart: false,
    ...(options.engine ? { engine: options.engine } : {}),
  });
  try {
    return await fn(manager, config);
  } finally {
    await manager[Symbol.asyncDispose]();
  }
}

// ---------------------------------------------------------------------------------------
// Observing the engine through the docker CLI.

/** The part of `docker inspect` the tests read. */
export interface ContainerInspect {
  Id: string;
  Name: string;
  State: { Status: string; Running: boolean; ExitCode: number; OOMKilled: boolean; Pid: number; StartedAt: string };
  Config: {
    Labels: Record<string, string> | null;
    Env: string[] | null;
    WorkingDir: string;
    Entrypoint: string[] | null;
    Cmd: string[] | null;
    Image: string;
  };
  HostConfig: {
    Privileged: boolean;
    SecurityOpt: string[] | null;
    CapDrop: string[] | null;
    CapAdd: string[] | null;
    Init: boolean | null;
    NetworkMode: string;
    Memory: number;
    MemorySwap: number;
    PidsLimit: number | null;
    NanoCpus: number;
    AutoRemove: boolean;
    ReadonlyRootfs: boolean;
    PidMode: string;
    IpcMode: string;
    UTSMode: string;
    Devices: unknown[] | null;
    Tmpfs: Record<string, string> | null;
    Binds: string[] | null;
    Mounts?: Array<{ Type: string; Source: string; Target: string; ReadOnly?: boolean }> | null;
  };
}

/** `docker inspect` of one container, or undefined when it does not exist. */
export async function inspectContainer(id: string): Promise<ContainerInspect | undefined> {
  const r = await docker(['container', 'inspect', id]);
  if (r.code !== 0) {
    if (/no such (container|object)/i.test(r.stderr)) return undefined;
    throw new Error(`docker inspect ${id} failed: ${r.stderr.trim()}`);
  }
  const parsed = JSON.parse(r.stdout) as ContainerInspect[];
  return parsed[0];
}

export interface ManagedContainer {
  id: string;
  name: string;
  labels: Record<string, string>;
  status: string;
}

/** Containers labelled genaicode-docker.managed=true (and any extra labels given), running or not. */
export async function listManaged(labels: Record<string, string> = {}): Promise<ManagedContainer[]> {
  const filters = Object.entries({ [LABEL.managed]: 'true', ...labels }).flatMap(([k, v]) => ['--filter', `label=${k}=${v}`]);
  const ids = (await dockerOk(['ps', '-a', '-q', '--no-trunc', ...filters]))
    .split('\n')
    .map((s) => s.trim())
    .filter(Boolean);
  if (ids.length === 0) return [];
  // Some may vanish between the two calls (auto-remove): inspect prints the others and exits 1.
  const r = await docker(['container', 'inspect', ...ids]);
  const parsed = r.stdout.trim() ? (JSON.parse(r.stdout) as ContainerInspect[]) : [];
  return parsed.map((c) => ({ id: c.Id, name: c.Name.replace(/^\//, ''), labels: c.Config.Labels ?? {}, status: c.State.Status }));
}

/** Number of containers on the engine (all states), to prove a call created none. */
export async function countAllContainers(): Promise<number> {
  return (await dockerOk(['ps', '-a', '-q'])).split('\n').filter((s) => s.trim()).length;
}

/** Managed containers whose session id is this file's prefix or a session under it. */
export async function listSessionContainers(prefix: string = currentSession()): Promise<ManagedContainer[]> {
  return (await listManaged()).filter((c) => {
    const s = c.labels[LABEL.session] ?? '';
    return s === prefix || s.startsWith(`${prefix}-`);
  });
}

/**
 * For an `afterAll`: no container of this file's sessions may be left. Leftovers are
 * removed (so one failure does not leak into the next run) and then reported as a failure.
 */
export async function expectNoContainersLeft(prefix: string = currentSession()): Promise<void> {
  let left = await listSessionContainers(prefix);
  // A container whose keep-alive just ended may still be in auto-removal for a moment.
  for (let i = 0; i < 10 && left.some((c) => c.status === 'removing' || c.status === 'exited'); i++) {
    await sleep(200);
    left = await listSessionContainers(prefix);
  }
  if (left.length === 0) return;
  await docker(['rm', '-f', ...left.map((c) => c.id)]);
  throw new Error(
    `Containers of session ${prefix} were left behind: ${left.map((c) => `${c.name} (${c.status}, session ${c.labels[LABEL.session]})`).join(', ')}`,
  );
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** Polls until `check` returns a value other than undefined, or fails after `timeoutMs`. */
export async function waitFor<T>(what: string, check: () => Promise<T | undefined>, timeoutMs: number, intervalMs = 100): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await check();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`Timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(intervalMs);
  }
}

// ---------------------------------------------------------------------------------------

/**
 * A real engine behind a recorder: every call is logged by name, and starting a created
 * container can be made to fail. Used to prove that checks run
 * before any engine call, and to make a created container fail to start.
 */
export class RecordingEngine implements ContainerEngine {
  readonly calls: string[] = [];
  /** When set, startContainer throws this instead of starting the (created) container. */
  failStartWith: Error | undefined;
  readonly inner: DockerEngine;
  readonly connection: DockerEngine['connection'];

  constructor(inner: DockerEngine = new DockerEngine()) {
    this.inner = inner;
    this.connection = inner.connection;
  }

  info(): Promise<EngineInfo> {
    this.calls.push('info');
    return this.inner.info();
  }
  hasImage(ref: string): Promise<boolean> {
    this.calls.push('hasImage');
    return this.inner.hasImage(ref);
  }
  inspectImage(ref: string): Promise<ImageInfo | undefined> {
    this.calls.push('inspectImage');
    return this.inner.inspectImage(ref);
  }
  pullImage(ref: string, onProgress?: (p: PullProgress) => void, signal?: AbortSignal, options?: PullOptions): Promise<void> {
    this.calls.push('pullImage');
    return this.inner.pullImage(ref, onProgress, signal, options);
  }
  createContainer(spec: ContainerSpec): Promise<string> {
    this.calls.push('createContainer');
    return this.inner.createContainer(spec);
  }
  async startContainer(id: string): Promise<void> {
    this.calls.push('startContainer');
    if (this.failStartWith) throw this.failStartWith;
    return this.inner.startContainer(id);
  }
  stopContainer(id: string, graceSeconds: number): Promise<boolean> {
    this.calls.push('stopContainer');
    return this.inner.stopContainer(id, graceSeconds);
  }
  removeContainer(id: string, force: boolean): Promise<boolean> {
    this.calls.push('removeContainer');
    return this.inner.removeContainer(id, force);
  }
  diskUsage(id: string): Promise<number | undefined> {
    this.calls.push('diskUsage');
    return this.inner.diskUsage(id);
  }
  inspectContainer(idOrName: string): Promise<ContainerState | undefined> {
    this.calls.push('inspectContainer');
    return this.inner.inspectContainer(idOrName);
  }
  listContainers(labels: Record<string, string>): Promise<ContainerSummary[]> {
    this.calls.push('listContainers');
    return this.inner.listContainers(labels);
  }
  exec(containerId: string, spec: ExecSpec, onOutput: (stream: StreamId, chunk: Buffer) => void): Promise<ExecSession> {
    this.calls.push('exec');
    return this.inner.exec(containerId, spec, onOutput);
  }
  statPath(id: string, path: string): Promise<PathStat | undefined> {
    this.calls.push('statPath');
    return this.inner.statPath(id, path);
  }
  extractArchive(id: string, path: string, archive: Buffer | AsyncIterable<Buffer>): Promise<void> {
    this.calls.push('extractArchive');
    return this.inner.extractArchive(id, path, archive);
  }
  removeContainersSync(ids: string[], timeoutMs: number): string[] {
    this.calls.push('removeContainersSync');
    return this.inner.removeContainersSync(ids, timeoutMs);
  }
  listOverlayVolumes(labels: Record<string, string>): Promise<Array<{ name: string; labels: Record<string, string> }>> {
    return this.inner.listOverlayVolumes(labels);
  }
  removeVolume(name: string): Promise<boolean> {
    this.calls.push('removeVolume');
    return this.inner.removeVolume(name);
  }
}

/**
 * One sandbox shared by the concurrent tests of a file, started on first use inside
 * withManager (so it is stopped however the file ends): call `release()` in `afterAll`
 * before checking for leftovers.
 */
export function sharedSandbox(
  start: Parameters<SandboxManager['start']>[0] = {},
  options: WithManagerOptions = {},
): { get: () => Promise<Sandbox>; release: () => Promise<void> } {
  let started: Promise<Sandbox> | undefined;
  let finished: Promise<void> | undefined;
  let releaseFn: (() => void) | undefined;
  const released = new Promise<void>((r) => (releaseFn = r));
  return {
    get: () => {
      started ??= new Promise<Sandbox>((resolveStarted, rejectStarted) => {
        finished = withManager(async (manager) => {
          const sb = await manager.start(start);
          resolveStarted(sb);
          await released;
        }, options).catch((e: unknown) => rejectStarted(e));
      });
      return started;
    },
    release: async () => {
      releaseFn?.();
      await finished;
    },
  };
}

export interface EngineEvent {
  Action?: string;
  status?: string;
}

/** The engine's events for one container between two times (seconds, fractions allowed). */
export async function eventsOf(id: string, since: number, until: number): Promise<EngineEvent[]> {
  const out = await dockerOk([
    'events',
    '--since',
    since.toFixed(3),
    '--until',
    until.toFixed(3),
    '--filter',
    `container=${id}`,
    '--format',
    '{{json .}}',
  ]);
  return out
    .split('\n')
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l) as EngineEvent);
}

/** Runs a shell script in a container as root (beside the sandbox's own user), failing on a non-zero exit. */
export function asRoot(id: string, script: string): Promise<string> {
  return dockerOk(['exec', '-u', '0', id, 'sh', '-c', script]);
}
