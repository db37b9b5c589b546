/**
 * A typed, in-memory ContainerEngine for unit tests. It records every call, keeps
 * containers and images in memory, runs scripted execs, and behaves like the dockerode
 * adapter at the port: a missing container is `false`/`undefined`, engine failures are
 * SandboxErrors. Commands run through the Sandbox wrapper get the wrapper's
 * "\x1e<pid>\x1e" marker as their first stderr frame, as in a real container; the two
 * helper scripts Sandbox runs as root (kill tree, cgroup counters) are answered from the
 * fake's own state, so timeouts, cancellation and limit detection work end to end.
 */
import { randomBytes } from 'node:crypto';
import type {
  ContainerEngine,
  ContainerSpec,
  ContainerState,
  ContainerSummary,
  EngineInfo,
  ExecSession,
  ExecSpec,
  ImageInfo,
  PathStat,
  PullOptions,
  PullProgress,
  StreamId,
} from '../../src/engine/container-engine.js';
import type { EngineConnection } from '../../src/engine/connection.js';
import { SandboxError } from '../../src/errors.js';
import { containerGoneError } from '../../src/engine/container-gone.js';
import { KILL_TREE_SCRIPT, MARK, READ_COUNTERS_SCRIPT, unwrapCommand } from '../../src/commands/wrapper-protocol.js';
import { parseMark } from '../../src/commands/exec-marks.js';

export type EngineMethod = Exclude<keyof ContainerEngine, 'connection' | 'hostMountRefusal'>;

/** One recorded call: the method and exactly the arguments it got. */
export type FakeCall = { [M in EngineMethod]: { method: M; args: Parameters<ContainerEngine[M]> } }[EngineMethod];

/** What a scripted exec does. */
export interface ScriptedExec {
  /** Output frames, delivered in order, one per event-loop turn. */
  frames: Array<[StreamId, Buffer]>;
  /** Exit code reported when the output ends (null: the engine could not tell). */
  exitCode: number | null;
  /** After its frames, the exec keeps running until the kill helper (or a stop/detach) ends it. */
  hangUntilKilled?: boolean;
  /**
   * Emit the wrapper's pid marker as the first stderr frame. Default: true for commands
   * run through wrapShellCommand/wrapArgv, false for anything else. Set false to send a
   * hand-made (e.g. split) marker in `frames`.
   */
  emitPidMarker?: boolean;
  /**
   * Frames delivered synchronously in one event-loop turn, as the demuxer does when one
   * socket chunk holds several frames. @default 1
   */
  framesPerTick?: number;
}

export type ExecScript = (containerId: string, spec: ExecSpec) => ScriptedExec;

export type ExecKind = 'command' | 'kill-tree' | 'cgroup-counters' | 'other';

/** One exec the fake ran, with its state. */
export interface FakeExec {
  seq: number;
  containerId: string;
  spec: ExecSpec;
  kind: ExecKind;
  /** Process id the wrapper marker reports (commands only). */
  pid: number;
  state: 'running' | 'exited' | 'killed' | 'detached';
  exitCode: number | null | undefined;
  /** Frames handed to onOutput so far (the pid marker included). */
  delivered: number;
}

export interface FakeContainer {
  id: string;
  name: string;
  image: string;
  labels: Record<string, string>;
  spec: ContainerSpec | undefined;
  running: boolean;
  status: 'created' | 'running' | 'exited';
  createdAt: Date;
  autoRemove: boolean;
  oomKilled: boolean;
  exitCode: number | null;
  /** cgroup counters the counters helper prints (cumulative, like the kernel's). */
  cgroup: { oomKill: number; pidsMax: number };
  /** Bytes in the writable layer, as diskUsage reports them (a test sets it). */
  diskBytes: number;
  /** What statPath answers, by absolute path (a test sets it); absent paths are undefined. */
  paths: Map<string, PathStat>;
  /** Archives extracted, in order. */
  extracted: Array<{ path: string; archive: Buffer | AsyncIterable<Buffer> }>;
}

interface Failure {
  error: SandboxError;
  remaining: number;
  when: ((args: readonly unknown[]) => boolean) | undefined;
}

export interface FakeEngineOptions {
  /** Images present locally. */
  images?: Iterable<string>;
  /** Whether a pull of `ref` finds the image in the "registry". @default () => true */
  pullable?: (ref: string) => boolean;
  /** Progress events each pull reports. @default three events */
  pullProgress?: (ref: string) => PullProgress[];
  /** A pull ends (and its image is present) only once this resolves. @default at once */
  pullGate?: (ref: string) => Promise<void>;
  /** Size and age of local images, as inspectImage reports them. @default 0 bytes, no date */
  imageInfo?: Record<string, ImageInfo>;
  /** Command execs. @default exits 0 with no output */
  script?: ExecScript;
  /** Overrides the built-in helper answers when it returns a result. */
  helperScript?: (containerId: string, spec: ExecSpec, kind: 'kill-tree' | 'cgroup-counters') => ScriptedExec | undefined;
  /** Exit code an exec gets when the kill helper kills it. @default 137 */
  killExitCode?: number;
  /** Where the "engine" listens, as DockerEngine exposes it (the manager keeps its socket unmountable). */
  connection?: EngineConnection;
}

function classify(spec: ExecSpec): ExecKind {
  const [sh, dashC, script] = spec.cmd;
  if (sh !== '/bin/sh' || dashC !== '-c') return 'other';
  if (script === KILL_TREE_SCRIPT) return 'kill-tree';
  if (script === READ_COUNTERS_SCRIPT) return 'cgroup-counters';
  return unwrapCommand(spec.cmd) !== undefined ? 'command' : 'other';
}

/** The user's command inside a wrapped exec: the shell string, or the argv. */
export function commandOf(spec: ExecSpec): string | string[] | undefined {
  return unwrapCommand(spec.cmd);
}

/** The wrapper's marker for a pid: 0x1E, the digits, 0x1E. */
export function pidMarker(pid: number): Buffer {
  return Buffer.concat([Buffer.from([MARK]), Buffer.from(String(pid)), Buffer.from([MARK])]);
}

export function out(text: string | Buffer): [StreamId, Buffer] {
  return ['stdout', typeof text === 'string' ? Buffer.from(text) : text];
}

export function err(text: string | Buffer): [StreamId, Buffer] {
  return ['stderr', typeof text === 'string' ? Buffer.from(text) : text];
}

function tick(): Promise<void> {
  return new Promise((r) => setImmediate(r));
}

const DEFAULT_PROGRESS = (ref: string): PullProgress[] => [
  { id: ref, status: 'Pulling from library' },
  { id: 'layer-1', status: 'Downloading', current: 512, total: 1024 },
  { id: ref, status: `Downloaded newer image for ${ref}` },
];

export class FakeEngine implements ContainerEngine {
  /** Every call, in order. */
  readonly calls: FakeCall[] = [];
  readonly containers = new Map<string, FakeContainer>();
  readonly images = new Set<string>();
  readonly execs: FakeExec[] = [];
  readonly connection: EngineConnection | undefined;
  script: ExecScript;
  helperScript: FakeEngineOptions['helperScript'];
  private readonly pullable: (ref: string) => boolean;
  private readonly pullProgress: (ref: string) => PullProgress[];
  private readonly pullGate: ((ref: string) => Promise<void>) | undefined;
  private readonly imageInfo: Record<string, ImageInfo>;
  private readonly killExitCode: number;
  private readonly failures = new Map<EngineMethod, Failure[]>();
  private readonly finishers = new Map<FakeExec, (exitCode: number | null, state: FakeExec['state']) => void>();
  private nextPid = 1000;

  constructor(options: FakeEngineOptions = {}) {
    for (const image of options.images ?? []) this.images.add(normalize(image));
    this.pullable = options.pullable ?? (() => true);
    this.pullProgress = options.pullProgress ?? DEFAULT_PROGRESS;
    this.pullGate = options.pullGate;
    this.imageInfo = Object.fromEntries(Object.entries(options.imageInfo ?? {}).map(([k, v]) => [normalize(k), v]));
    this.script = options.script ?? (() => ({ frames: [], exitCode: 0 }));
    this.helperScript = options.helperScript;
    this.killExitCode = options.killExitCode ?? 137;
    this.connection = options.connection;
  }

  // ---- test controls -------------------------------------------------------

  /**
   * Makes `method` throw `error` (rejecting for asynchronous methods), `times` times
   * (default: until cleared), optionally only for calls whose arguments match `when`.
   */
  fail<M extends EngineMethod>(
    method: M,
    error: SandboxError,
    options: { times?: number; when?: (...args: Parameters<ContainerEngine[M]>) => boolean } = {},
  ): this {
    const when = options.when;
    const list = this.failures.get(method) ?? [];
    list.push({
      error,
      remaining: options.times ?? Number.POSITIVE_INFINITY,
      // The arguments recorded for M are exactly Parameters<ContainerEngine[M]>.
      when: when ? (args) => when(...(args as Parameters<ContainerEngine[M]>)) : undefined,
    });
    this.failures.set(method, list);
    return this;
  }

  clearFailures(): void {
    this.failures.clear();
  }

  clearCalls(): void {
    this.calls.length = 0;
  }

  /** The argument lists of every call of one method. */
  callsOf<M extends EngineMethod>(method: M): Array<Parameters<ContainerEngine[M]>> {
    const result: Array<Parameters<ContainerEngine[M]>> = [];
    for (const c of this.calls) {
      // The discriminant guarantees the argument type of this entry.
      if (c.method === method) result.push(c.args as Parameters<ContainerEngine[M]>);
    }
    return result;
  }

  methods(): EngineMethod[] {
    return this.calls.map((c) => c.method);
  }

  /** Adds a container as if another process (or another host) had created it. Not recorded. */
  seedContainer(c: {
    id?: string;
    name?: string;
    image?: string;
    labels?: Record<string, string>;
    running?: boolean;
    createdAt?: Date;
  }): FakeContainer {
    const container: FakeContainer = {
      id: c.id ?? newId(),
      name: c.name ?? `seeded-${this.containers.size + 1}`,
      image: c.image ?? 'alpine:latest',
      labels: { ...(c.labels ?? {}) },
      spec: undefined,
      running: c.running ?? true,
      status: (c.running ?? true) ? 'running' : 'exited',
      createdAt: c.createdAt ?? new Date(),
      autoRemove: false,
      oomKilled: false,
      exitCode: null,
      cgroup: { oomKill: 0, pidsMax: 0 },
      diskBytes: 0,
      paths: new Map(),
      extracted: [],
    };
    this.containers.set(container.id, container);
    return container;
  }

  /** Sets the cgroup counters the counters helper reports for a container. */
  setCgroup(containerId: string, counters: Partial<FakeContainer['cgroup']>): void {
    const c = this.containers.get(containerId);
    if (!c) throw new Error(`FakeEngine: no container ${containerId}`);
    c.cgroup = { ...c.cgroup, ...counters };
  }

  execsOf(kind: ExecKind): FakeExec[] {
    return this.execs.filter((e) => e.kind === kind);
  }

  /** Resolves once `predicate` holds (checked every event-loop turn). */
  async waitFor(predicate: (engine: this) => boolean, timeoutMs = 5_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!predicate(this)) {
      if (Date.now() > deadline) throw new Error('FakeEngine.waitFor: timed out');
      await tick();
    }
  }

  private record(call: FakeCall): void {
    this.calls.push(call);
    const list = this.failures.get(call.method);
    if (!list) return;
    const f = list.find((x) => x.remaining > 0 && (!x.when || x.when(call.args)));
    if (!f) return;
    f.remaining -= 1;
    throw f.error;
  }

  private find(idOrName: string): FakeContainer | undefined {
    const exact = this.containers.get(idOrName);
    if (exact) return exact;
    const matches = [...this.containers.values()].filter((c) => c.name === idOrName || (idOrName.length > 0 && c.id.startsWith(idOrName)));
    return matches.length === 1 ? matches[0] : undefined;
  }

  // ---- ContainerEngine -----------------------------------------------------

  async info(): Promise<EngineInfo> {
    this.record({ method: 'info', args: [] });
    return { version: '0.0.0-fake', apiVersion: '1.41', os: 'linux/amd64', kind: 'docker', cgroupVersion: '2', endpoint: 'fake://' };
  }

  async hasImage(ref: string): Promise<boolean> {
    this.record({ method: 'hasImage', args: [ref] });
    return this.images.has(normalize(ref));
  }

  async inspectImage(ref: string): Promise<ImageInfo | undefined> {
    this.record({ method: 'inspectImage', args: [ref] });
    const key = normalize(ref);
    return this.images.has(key) ? (this.imageInfo[key] ?? { sizeBytes: 0 }) : undefined;
  }

  async pullImage(ref: string, onProgress?: (p: PullProgress) => void, signal?: AbortSignal, options?: PullOptions): Promise<void> {
    this.record({ method: 'pullImage', args: [ref, onProgress, signal, options] });
    if (signal?.aborted) throw new SandboxError('ABORTED', `Pull ${ref}: aborted`);
    if (!this.pullable(ref))
      throw new SandboxError('IMAGE_NOT_FOUND', `Image ${ref} was not found (fake registry).`, { data: { image: ref } });
    for (const p of this.pullProgress(ref)) {
      await tick();
      onProgress?.(p);
    }
    await this.pullGate?.(ref);
    if (signal?.aborted) throw new SandboxError('ABORTED', `Pull ${ref}: aborted`);
    this.images.add(normalize(ref));
  }

  async createContainer(spec: ContainerSpec): Promise<string> {
    this.record({ method: 'createContainer', args: [spec] });
    if (!this.images.has(normalize(spec.image))) {
      throw new SandboxError('IMAGE_NOT_FOUND', `Image ${spec.image} is not present on the engine.`, { data: { image: spec.image } });
    }
    const name = spec.name ?? `fake-${this.containers.size + 1}`;
    if ([...this.containers.values()].some((c) => c.name === name)) {
      throw new SandboxError('INVALID_ARGUMENT', `A container named ${JSON.stringify(name)} already exists: choose another name.`, {
        data: { name },
      });
    }
    const id = newId();
    this.containers.set(id, {
      id,
      name,
      image: spec.image,
      labels: { ...spec.labels },
      spec,
      running: false,
      status: 'created',
      createdAt: new Date(),
      autoRemove: spec.autoRemove,
      oomKilled: false,
      exitCode: null,
      cgroup: { oomKill: 0, pidsMax: 0 },
      diskBytes: 0,
      paths: new Map(),
      extracted: [],
    });
    return id;
  }

  async startContainer(id: string): Promise<void> {
    this.record({ method: 'startContainer', args: [id] });
    const c = this.find(id);
    if (!c) throw new SandboxError('CONTAINER_START_FAILED', `Container ${id.slice(0, 12)} did not start: no such container`);
    c.running = true;
    c.status = 'running';
  }

  async stopContainer(id: string, graceSeconds: number): Promise<boolean> {
    this.record({ method: 'stopContainer', args: [id, graceSeconds] });
    const c = this.find(id);
    if (!c) return false;
    this.endContainer(c, 137);
    return true;
  }

  async removeContainer(id: string, force: boolean): Promise<boolean> {
    this.record({ method: 'removeContainer', args: [id, force] });
    const c = this.find(id);
    if (!c) return false;
    if (c.running && !force) {
      throw new SandboxError('ENGINE_ERROR', `Remove container ${id.slice(0, 12)}: container is running, stop it or use force`, {
        data: { status: 409 },
      });
    }
    this.endExecs(c.id);
    this.containers.delete(c.id);
    return true;
  }

  async diskUsage(id: string): Promise<number | undefined> {
    this.record({ method: 'diskUsage', args: [id] });
    return this.find(id)?.diskBytes;
  }

  async inspectContainer(idOrName: string): Promise<ContainerState | undefined> {
    this.record({ method: 'inspectContainer', args: [idOrName] });
    const c = this.find(idOrName);
    if (!c) return undefined;
    return {
      id: c.id,
      name: c.name,
      running: c.running,
      status: c.status,
      oomKilled: c.oomKilled,
      exitCode: c.running ? null : c.exitCode,
      labels: { ...c.labels },
    };
  }

  async listContainers(labels: Record<string, string>): Promise<ContainerSummary[]> {
    this.record({ method: 'listContainers', args: [labels] });
    return [...this.containers.values()]
      .filter((c) => Object.entries(labels).every(([k, v]) => c.labels[k] === v))
      .map((c) => ({ id: c.id, names: [c.name], image: c.image, labels: { ...c.labels }, state: c.status, createdAt: c.createdAt }));
  }

  async exec(containerId: string, spec: ExecSpec, onOutput: (stream: StreamId, chunk: Buffer) => void): Promise<ExecSession> {
    this.record({ method: 'exec', args: [containerId, spec, onOutput] });
    const c = this.find(containerId);
    if (!c) {
      throw containerGoneError({ id: containerId }, 'it was stopped, removed or reached its expiry');
    }
    if (!c.running) {
      throw containerGoneError({ id: containerId }, 'the engine says: container is not running');
    }
    const kind = classify(spec);
    const rec: FakeExec = {
      seq: this.execs.length + 1,
      containerId: c.id,
      spec,
      kind,
      pid: this.nextPid++,
      state: 'running',
      exitCode: undefined,
      delivered: 0,
    };
    this.execs.push(rec);

    let scripted: ScriptedExec;
    if (kind === 'kill-tree' || kind === 'cgroup-counters') {
      scripted = this.helperScript?.(c.id, spec, kind) ?? (kind === 'kill-tree' ? this.killTree(c, spec) : this.counters(c));
    } else {
      scripted = this.script(c.id, spec);
    }
    const frames = [...scripted.frames];
    if (scripted.emitPidMarker ?? kind === 'command') frames.unshift(['stderr', pidMarker(rec.pid)]);
    return this.run(rec, frames, scripted, onOutput);
  }

  async statPath(id: string, path: string): Promise<PathStat | undefined> {
    this.record({ method: 'statPath', args: [id, path] });
    const c = this.find(id);
    if (!c) throw containerGoneError({ id }, 'no such container');
    return c.paths.get(path);
  }

  async extractArchive(id: string, path: string, archive: Buffer | AsyncIterable<Buffer>): Promise<void> {
    this.record({ method: 'extractArchive', args: [id, path, archive] });
    const c = this.find(id);
    if (!c) throw containerGoneError({ id }, 'no such container');
    c.extracted.push({ path, archive });
  }

  /** Like Docker's, the fake's overlays go with their containers: there are none to list. */
  listOverlayVolumes(labels: Record<string, string>): Promise<Array<{ name: string; labels: Record<string, string> }>> {
    this.record({ method: 'listOverlayVolumes', args: [labels] });
    return Promise.resolve([]);
  }

  removeVolume(name: string): Promise<boolean> {
    this.record({ method: 'removeVolume', args: [name] });
    return Promise.resolve(false);
  }

  removeContainersSync(ids: string[], timeoutMs: number): string[] {
    this.record({ method: 'removeContainersSync', args: [ids, timeoutMs] });
    for (const id of ids) {
      const c = this.find(id);
      if (!c) continue;
      this.endExecs(c.id);
      this.containers.delete(c.id);
    }
    return [];
  }

  // ---- internals -----------------------------------------------------------

  /** As kill-tree.sh: every exec whose mark (its limits) is at or below the kill's, or the same made-up mark. */
  private killTree(c: FakeContainer, spec: ExecSpec): ScriptedExec {
    const mark = spec.cmd[4] ?? '';
    const pair = (m: string) => (/=\d+:\d+$/.test(m) ? parseMark(m) : undefined);
    const limit = pair(mark);
    const below = (env: readonly string[]) =>
      env.some((m) => {
        const p = pair(m);
        return m === mark || (limit && p && p.rssKb <= limit.rssKb && p.cpuSeconds <= limit.cpuSeconds);
      });
    let n = 0;
    for (const e of this.execs) {
      if (e.containerId !== c.id || e.state !== 'running' || e.kind === 'kill-tree' || e.kind === 'cgroup-counters') continue;
      if (mark !== '' && below(e.spec.env ?? [])) {
        n += 1;
        this.finishers.get(e)?.(this.killExitCode, 'killed');
      }
    }
    return { frames: [['stdout', Buffer.from(`gone ${n}\n`)]], exitCode: 0 };
  }

  private counters(c: FakeContainer): ScriptedExec {
    return { frames: [['stdout', Buffer.from(`\x1e${c.cgroup.oomKill}:${c.cgroup.pidsMax}\x1e`)]], exitCode: 0 };
  }

  private endExecs(containerId: string): void {
    for (const e of this.execs) {
      if (e.containerId === containerId && e.state === 'running') this.finishers.get(e)?.(null, 'exited');
    }
  }

  private endContainer(c: FakeContainer, exitCode: number): void {
    c.running = false;
    c.status = 'exited';
    c.exitCode = exitCode;
    this.endExecs(c.id);
    if (c.autoRemove) this.containers.delete(c.id);
  }

  private run(
    rec: FakeExec,
    frames: Array<[StreamId, Buffer]>,
    scripted: ScriptedExec,
    onOutput: (stream: StreamId, chunk: Buffer) => void,
  ): ExecSession {
    let resolveDone!: (v: { exitCode: number | null }) => void;
    const done = new Promise<{ exitCode: number | null }>((r) => {
      resolveDone = r;
    });
    const finish = (exitCode: number | null, state: FakeExec['state']) => {
      if (rec.state !== 'running') return;
      rec.state = state;
      rec.exitCode = exitCode;
      this.finishers.delete(rec);
      resolveDone({ exitCode });
    };
    this.finishers.set(rec, finish);

    const perTick = Math.max(1, scripted.framesPerTick ?? 1);
    void (async () => {
      for (const [i, [stream, payload]] of frames.entries()) {
        if (i % perTick === 0) await tick();
        if (rec.state !== 'running') return;
        // Like the real adapter, a chunk is a view of a reused buffer, valid only during the
        // call: it is overwritten right after, so a consumer that keeps one without copying
        // ends up with garbage in these tests.
        const chunk = Buffer.from(payload);
        rec.delivered += 1;
        onOutput(stream, chunk);
        chunk.fill(0x23);
      }
      await tick();
      if (!scripted.hangUntilKilled) finish(scripted.exitCode, 'exited');
    })();

    return {
      done,
      detach: () => finish(null, 'detached'),
    };
  }
}

function newId(): string {
  return randomBytes(32).toString('hex');
}

/** `alpine` and `alpine:latest` are the same image. */
function normalize(ref: string): string {
  const lastSlash = ref.lastIndexOf('/');
  return ref.slice(lastSlash + 1).includes(':') || ref.includes('@') ? ref : `${ref}:latest`;
}
