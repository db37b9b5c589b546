import { BOUNDS } from '../config/config-schema.js';
import { projectChangedText } from '../config/project-trust.js';
import { unenforcedLimitsNote } from '../engine/rootless.js';
import { swallowed } from '../debug.js';
import { SandboxError } from '../errors.js';
import { isGone, isGoneError } from '../engine/container-gone.js';
import type { ExecResult } from '../commands/exec-types.js';
import type { Sandbox } from '../sandbox/sandbox.js';
import type { SandboxManager, StartOptions } from '../sandbox/sandbox-manager.js';
import { RUN_CODE_SCRIPT } from '../commands/wrapper-protocol.js';

/**
 * codeExecute: a Python or bash snippet run in a sandbox the caller never manages (seed
 * 003). Keep-alive (the default): one container per executor, reused across calls, and
 * replaced after `maxExecutions` calls, after `idleTimeoutMinutes` without one, near its
 * expiry, or when a check before reuse finds it gone; the call that gets a new one is told
 * why, since the files a snippet left (the only state between calls) are gone with it.
 * One-shot: a fresh container per call, removed at its end.
 *
 * The code travels on the exec's stdin (see RUNNERS): it is never part of a command line,
 * so any size (up to `maxCodeBytes`), any quotes and any text run exactly as written.
 */

export const CODE_LANGUAGES = ['python', 'bash'] as const;
export type CodeLanguage = (typeof CODE_LANGUAGES)[number];

/**
 * How each language runs (scripts/container/run-code.sh): python3 reads its whole program
 * from stdin before it runs it (`python3 -I -`: frames say `File "<stdin>"`; isolated, so a
 * module a snippet left in the working folder never shadows one imported later); bash reads it
 * from fd 3, with an empty stdin of its own. After it (and before it, after a call cut short), whatever a snippet
 * left running is killed.
 */
const runner = (language: CodeLanguage): string[] => ['/bin/sh', '-c', RUN_CODE_SCRIPT, 'run-code', language];

export interface CodeRequest {
  language: CodeLanguage;
  code: string;
  /** @default codeExecute.timeoutSeconds (30); at most codeExecute.maxTimeoutSeconds */
  timeoutSeconds?: number;
  signal?: AbortSignal;
  /**
   * Asked before a container is started for this call, with a sentence saying what will
   * start; false refuses the call (USER_DECLINED). Not asked when a kept-alive one is reused.
   */
  approveStart?: (question: string) => Promise<boolean>;
}

export interface CodeRun {
  /** What the snippet did: exit code, output (capped; the log has all), limits hit. */
  result: ExecResult;
  language: CodeLanguage;
  mode: 'keep-alive' | 'one-shot';
  /** A kept-alive container used before ('reused'), or one started for this call ('new'). */
  container: 'reused' | 'new';
  containerName: string;
  /** Why the kept-alive container of earlier calls was replaced: its files are gone. */
  stateLost?: string;
}

export interface CodeExecutorOptions {
  manager: SandboxManager;
  /** @default Date.now */
  now?: () => number;
}

interface Kept {
  sandbox: Sandbox;
  executions: number;
  lastUsed: number;
  /** The last call ended abnormally (a timeout, a cancel, a limit, a container in doubt): look before reuse. */
  doubtful: boolean;
}

/** A one-shot container lives this long past its call's time limit, at most (its dead-man switch). */
const ONE_SHOT_TTL_MARGIN_SECONDS = 60;
/** A kept-alive container this close to its expiry (beyond the call's time limit) is replaced first. */
const EXPIRY_MARGIN_MS = 10_000;

export class CodeExecutor {
  private kept: Kept | undefined;
  /** Why the kept container went away between calls (idle), told to the next call. */
  private retired: string | undefined;
  private idleTimer: NodeJS.Timeout | undefined;
  /** Calls on the kept-alive container run one after another: its counts and checks stay true. */
  private queue: Promise<unknown> = Promise.resolve();
  private readonly now: () => number;

  constructor(private readonly options: CodeExecutorOptions) {
    this.now = options.now ?? Date.now;
  }

  private get settings() {
    return this.options.manager.config.codeExecute;
  }

  /** The sandbox profile of every code container: no setting reaches privileged mode or a host namespace. */
  startOptions(ttlSeconds?: number, signal?: AbortSignal): StartOptions {
    const c = this.settings;
    return {
      image: c.image,
      network: c.network,
      memoryBytes: c.memory,
      cpus: c.cpus,
      pids: c.pids,
      readOnlyRoot: true,
      tmpfsBytes: c.tmpfsSize,
      // The minimal capability set only: `capAdd` of the configuration is for command containers.
      capAdd: [],
      mounts: c.mounts.map((m) => ({ hostPath: m.hostPath, containerPath: m.containerPath, writable: m.writable })),
      ...(ttlSeconds !== undefined ? { ttlSeconds } : {}),
      ...(signal ? { signal } : {}),
    };
  }

  /**
   * Runs one snippet. A non-zero exit, a timeout or a limit hit is a result, not an error.
   * @throws SandboxError INVALID_ARGUMENT (language, empty or too long code, timeout out of
   *   bounds), USER_DECLINED, and what starting a container can throw (IMAGE_NOT_ALLOWED,
   *   IMAGE_NOT_FOUND, POLICY_VIOLATION, ENGINE_UNAVAILABLE, ...)
   */
  async execute(request: CodeRequest): Promise<CodeRun> {
    const timeoutMs = this.check(request);
    if (!this.settings.keepAlive) return this.oneShot(request, timeoutMs);
    const call = this.queue.then(() => this.keepAlive(request, timeoutMs));
    this.queue = call.catch(() => undefined);
    return call;
  }

  /** Stops the kept-alive container, if any. The executor can be used again afterwards. */
  async shutdown(): Promise<void> {
    clearTimeout(this.idleTimer);
    const done = this.queue.then(() => this.drop('the executor was shut down'));
    this.queue = done.catch(() => undefined);
    await done;
    this.retired = undefined;
  }

  /** The checks of a request; returns its time limit in milliseconds. */
  private check(request: CodeRequest): number {
    const c = this.settings;
    if (!(CODE_LANGUAGES as readonly string[]).includes(request.language))
      throw new SandboxError(
        'INVALID_ARGUMENT',
        `language must be one of ${CODE_LANGUAGES.join(', ')}, not ${JSON.stringify(request.language)}.`,
      );
    if (typeof request.code !== 'string' || request.code.trim() === '') throw new SandboxError('INVALID_ARGUMENT', 'code is empty.');
    // python3 would stop reading its program at a NUL and run the part before it.
    if (request.code.includes('\0')) throw new SandboxError('INVALID_ARGUMENT', 'code contains a NUL byte: program text cannot.');
    const bytes = Buffer.byteLength(request.code);
    if (bytes > c.maxCodeBytes)
      throw new SandboxError('INVALID_ARGUMENT', `code is ${bytes} bytes; at most ${c.maxCodeBytes} (codeExecute.maxCodeBytes).`);
    const seconds = request.timeoutSeconds ?? c.timeoutSeconds;
    const max = Math.min(c.maxTimeoutSeconds, BOUNDS.codeTimeoutSeconds.max);
    if (!Number.isInteger(seconds) || seconds < BOUNDS.codeTimeoutSeconds.min || seconds > max)
      throw new SandboxError(
        'INVALID_ARGUMENT',
        `timeoutSeconds must be a whole number from 1 to ${max} (codeExecute.maxTimeoutSeconds), not ${seconds}.`,
      );
    return seconds * 1000;
  }

  private async oneShot(request: CodeRequest, timeoutMs: number): Promise<CodeRun> {
    const sandbox = await this.start(request, Math.ceil(timeoutMs / 1000) + ONE_SHOT_TTL_MARGIN_SECONDS);
    try {
      const result = await this.run(sandbox, request, timeoutMs);
      return { result, language: request.language, mode: 'one-shot', container: 'new', containerName: sandbox.name };
    } finally {
      await sandbox.stop();
    }
  }

  private async keepAlive(request: CodeRequest, timeoutMs: number): Promise<CodeRun> {
    clearTimeout(this.idleTimer);
    let stateLost = (await this.checkKept(timeoutMs)) ?? this.retired;
    this.retired = undefined;
    let container: CodeRun['container'] = 'reused';
    for (let attempt = 0; ; attempt++) {
      if (!this.kept) {
        this.kept = { sandbox: await this.start(request), executions: 0, lastUsed: this.now(), doubtful: false };
        container = 'new';
      }
      const kept = this.kept;
      kept.executions++;
      kept.lastUsed = this.now();
      try {
        // The clean-up before the snippet is only needed when the last call did not end by
        // itself (its own clean-up after it did not run): a /proc scan saved on every other call.
        const result = await this.run(kept.sandbox, request, timeoutMs, kept.doubtful);
        kept.doubtful = result.timedOut || result.canceled || result.oomKilled || result.diskLimitHit || result.reason !== undefined;
        return {
          result,
          language: request.language,
          mode: 'keep-alive',
          container,
          containerName: kept.sandbox.name,
          ...(stateLost ? { stateLost } : {}),
        };
      } catch (e) {
        // Gone between the check and the call (killed from outside): once more, in a new one.
        if (attempt > 0 || !isGoneError(e)) throw e;
        await this.drop('gone');
        stateLost = 'the container was gone (stopped or removed from outside)';
      } finally {
        this.armIdle();
      }
    }
  }

  /** The kept-alive container, checked before reuse; dropped, with the reason, when it must be replaced. */
  private async checkKept(timeoutMs: number): Promise<string | undefined> {
    const k = this.kept;
    if (!k) return undefined;
    const c = this.settings;
    const now = this.now();
    let why: string | undefined;
    if (k.executions >= c.maxExecutions) why = `the container had run ${k.executions} calls (codeExecute.maxExecutions)`;
    else if (now - k.lastUsed > c.idleTimeoutMinutes * 60_000)
      why = `the container was idle for more than ${c.idleTimeoutMinutes} min (codeExecute.idleTimeoutMinutes)`;
    else if (k.sandbox.info.expiresAt.getTime() - now < timeoutMs + EXPIRY_MARGIN_MS)
      why = 'the container reached the end of its lifetime (ttlSeconds)';
    else if (k.doubtful) {
      // After a normal call the next exec is the check: one that finds the container gone
      // fails before the code runs, and the call is run again in a new one (keepAlive).
      // After an abnormal end, look first (2 ms): the container may have been stopped.
      const state = await this.options.manager.engine.inspectContainer(k.sandbox.id).catch((e: unknown) => {
        swallowed('checking the kept-alive code container', e);
        return undefined;
      });
      // An engine that cannot say is taken as gone here: in doubt, a new container.
      if (isGone(state))
        why =
          !state || state.status === 'removing' || state.status === 'dead'
            ? 'the container was gone (stopped or removed from outside)'
            : `the container had stopped (${state.status})`;
    }
    if (why) await this.drop(why);
    return why;
  }

  /** Removes the kept-alive container when it has been idle for idleTimeoutMinutes (the next call is told). */
  private armIdle(): void {
    clearTimeout(this.idleTimer);
    if (!this.kept) return;
    const minutes = this.settings.idleTimeoutMinutes;
    this.idleTimer = setTimeout(() => {
      const done = this.queue.then(async () => {
        if (!this.kept || this.now() - this.kept.lastUsed < minutes * 60_000) return;
        await this.drop('idle');
        this.retired = `the container was idle for more than ${minutes} min (codeExecute.idleTimeoutMinutes)`;
      });
      this.queue = done.catch((e: unknown) => swallowed('removing an idle code container', e));
    }, minutes * 60_000);
    this.idleTimer.unref();
  }

  private async drop(why: string): Promise<void> {
    const k = this.kept;
    this.kept = undefined;
    if (k) await k.sandbox.stop().catch((e: unknown) => swallowed(`removing the code container (${why})`, e));
  }

  private async start(request: CodeRequest, ttlSeconds?: number): Promise<Sandbox> {
    const c = this.settings;
    const manager = this.options.manager;
    if (request.approveStart) {
      const question =
        `Start a Docker container from ${c.image} to run ${request.language} code from the model? ` +
        `(memory ${Math.round(c.memory / 1024 ** 2)} MiB, ${c.cpus} CPU${unenforcedLimitsNote(manager.config.engine)}, network ${c.network}, read-only root` +
        `${c.mounts.length ? `, mounts ${c.mounts.map((m) => `${m.hostPath}:${m.containerPath}:${m.writable ? 'rw' : 'ro'}`).join(' ')}` : ''}` +
        `${c.keepAlive ? `; kept for up to ${c.maxExecutions} calls or ${c.idleTimeoutMinutes} min idle` : '; removed after the call'})` +
        projectChangedText(manager.config);
      if (!(await request.approveStart(question)))
        throw new SandboxError('USER_DECLINED', `The user declined to start a container from ${c.image} for code.`);
    }
    return manager.start(this.startOptions(ttlSeconds ?? manager.config.ttlSeconds, request.signal));
  }

  private run(sandbox: Sandbox, request: CodeRequest, timeoutMs: number, cleanFirst = false): Promise<ExecResult> {
    return sandbox.exec([...runner(request.language), cleanFirst ? 'clean-first' : 'clean-after'], {
      stdin: request.code,
      timeoutMs,
      label: request.language,
      ...(request.signal ? { signal: request.signal } : {}),
    });
  }
}
