import type { ContainerEngine, ExecSession } from '../engine/container-engine.js';
import { swallowed } from '../debug.js';
import { containerGoneError, isGoneError, UNANSWERED_MS, UNANSWERED_REASON } from '../engine/container-gone.js';
import { poll, systemClock, within, type Clock } from '../retry.js';
import { CPU_CEILING_S } from './exec-marks.js';
import {
  type Counters,
  KILL_TREE_SCRIPT,
  MOUNTINFO_SCRIPT,
  NET_TCP_SCRIPT,
  parseTrailer,
  READ_COUNTERS_SCRIPT,
  REMOVE_FILES_SCRIPT,
  RUN_CODE_SCRIPT,
} from './wrapper-protocol.js';

/**
 * The helper execs a sandbox runs beside its commands (scripts/container/*.sh): killing a
 * command's tree, reading the limit counters, reading the mount table. Each is a second
 * exec in the same container, as the container's user.
 */
export class ContainerHelpers {
  /** A helper got no answer from the engine in time (UNANSWERED_MS): the container is wedged; nothing more is asked of it. */
  unanswered = false;

  /** cgroup counters as last read; a fresh container starts at zero. */
  private counters: Counters = { oomKills: 0, pidsRefused: 0 };

  constructor(
    private readonly engine: ContainerEngine,
    private readonly containerId: string,
    /** The kill's retries wait on it (a unit test's clock shortens them). */
    private readonly clock: Clock = systemClock,
  ) {}

  /** The container's mount table (/proc/self/mountinfo), read with shell builtins. */
  async mountTable(): Promise<string> {
    return (await this.runHelper(MOUNTINFO_SCRIPT, [])).stdout;
  }

  /** The container's TCP socket tables (/proc/net/tcp and tcp6), read with shell builtins. */
  async tcpTables(): Promise<string> {
    return (await this.runHelper(NET_TCP_SCRIPT, [])).stdout;
  }

  /**
   * Removes files (not folders) at `paths` (absolute, in the container), as the container's
   * user: the host deleted them, and the container's own copies would hide that.
   */
  async removeFiles(paths: readonly string[]): Promise<void> {
    if (paths.length === 0) return;
    await this.runHelper(REMOVE_FILES_SCRIPT, [...paths]);
  }

  /**
   * Runs a helper script and returns its stdout (small by construction). It runs as the
   * container's user: with a non-root user the engine gives execs no capabilities, so a
   * root helper could not signal the command's processes, while the same user can.
   */
  private async runHelper(script: string, args: string[]): Promise<{ exitCode: number | null; stdout: string }> {
    // One helper the engine never answered is enough: the next would wait as long for nothing.
    if (this.unanswered) throw containerGoneError({ id: this.containerId }, UNANSWERED_REASON, { unanswered: true });
    const chunks: Buffer[] = [];
    let session: ExecSession | undefined;
    const run = async () => {
      session = await this.engine.exec(this.containerId, { cmd: ['/bin/sh', '-c', script, 'sh', ...args] }, (stream, chunk) => {
        if (stream === 'stdout') chunks.push(Buffer.from(chunk));
      });
      return (await session.done).exitCode;
    };
    // Bounded: an exec the engine never starts or ends (its set-up frozen by a process in the
    // container) must not hold the command's answer, its kill or the plugin's exit.
    const ran = await within(run(), UNANSWERED_MS);
    if (!ran) {
      this.unanswered = true;
      session?.detach();
      throw containerGoneError({ id: this.containerId }, UNANSWERED_REASON, { unanswered: true });
    }
    return { exitCode: ran.value, stdout: Buffer.concat(chunks).toString('utf8') };
  }

  /**
   * Kills every process in the container but its init and keep-alive (what commands left
   * running), as codeExecute does after a snippet (run-code.sh). Returns `gone <n>`.
   */
  async killLeftovers(): Promise<string> {
    const r = await this.runHelper(RUN_CODE_SCRIPT, ['clean']);
    return r.stdout.trim() || `exit ${r.exitCode}`;
  }

  /**
   * Kills every process of the exec marked `execMark` (exec-marks.ts: each process at or below
   * its pair of limits) from a second exec. The engine has no call to kill an exec'd process,
   * so this is the only way that works in any image with /bin/sh. Retried while the
   * container's process limit refuses the helper itself.
   */
  async killTree(execMark: string): Promise<string> {
    let last = 'not run';
    // Bounded in time, not only in tries: under a fork flood each try waits on a refused
    // fork, and a timeout must still answer soon after its limit.
    const done = await poll(
      async () => {
        try {
          const r = await this.runHelper(KILL_TREE_SCRIPT, [execMark, String(CPU_CEILING_S)]);
          last = r.stdout.trim() || `exit ${r.exitCode}`;
          return r.exitCode === 0 && last.startsWith('gone') ? last : undefined;
        } catch (e) {
          last = e instanceof Error ? e.message : String(e);
          return isGoneError(e) ? (e.data.unanswered ? 'container not answering' : 'container gone') : undefined;
        }
      },
      { timeoutMs: KILL_TREE_DEADLINE_MS, intervalMs: (attempt) => 100 + attempt * 50, maxAttempts: 20, clock: this.clock },
    );
    return done ?? last;
  }

  /**
   * Reads the counters now and compares them with `before` (else with the last values read).
   * A helper that failed or printed no counters is tried again (twice, 150 and 300 ms later):
   * on a loaded engine an exec can fail for a moment, and a memory kill reported as nothing
   * would send the model looking for a bug in its code. One the engine never answered is not.
   */
  async readLimitCounters(before?: Counters): Promise<{ oomKilled: boolean; pidsLimitHit: boolean }> {
    let last: unknown = "no counters in the helper's output";
    const now = await poll(
      async () => {
        try {
          const read = parseTrailer((await this.runHelper(READ_COUNTERS_SCRIPT, [])).stdout);
          if (!read) last = "no counters in the helper's output";
          return read;
        } catch (e) {
          last = e;
          return isGoneError(e) ? null : undefined;
        }
      },
      { timeoutMs: COUNTERS_DEADLINE_MS, intervalMs: (attempt) => 150 * (attempt + 1), maxAttempts: 3, clock: this.clock },
    );
    if (!now) {
      swallowed('reading the limit counters', last);
      return { oomKilled: false, pidsLimitHit: false };
    }
    const base = before ?? this.counters;
    this.counters = { oomKills: now.oomKills, pidsRefused: now.pidsRefused };
    return { oomKilled: now.oomKills > base.oomKills, pidsLimitHit: now.pidsRefused > base.pidsRefused };
  }
}

/**
 * Reading the counters is bounded by its tries, not by time: each helper is bounded
 * (UNANSWERED_MS), and a slow failure on a loaded engine is when a second try matters most.
 */
const COUNTERS_DEADLINE_MS = 3 * UNANSWERED_MS;

/** The longest a timeout's kill keeps trying before it answers with what survived. */
const KILL_TREE_DEADLINE_MS = 5_000;
