/**
 * Observation helpers for the plugin's end-to-end tests: what the engine did (docker
 * events, streamed through the docker CLI, never through the code under test) and what
 * the scripted model was shown (the plugin's answers as function responses).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { hostname } from 'node:os';
import { docker, listManaged } from '../support/engine.js';
import type { RecordedCall, RunResult } from './harness/harness.js';
import { E2E_HOST } from './harness/host.js';

/** One line of `docker events --format '{{json .}}'`. */
export interface DockerEvent {
  Type: string;
  Action: string;
  id?: string;
  Actor: { ID: string; Attributes: Record<string, string> };
  time: number;
  timeNano: number;
}

/**
 * Streams `docker events` matching `filters` from `sinceMs` on. `--since` makes the engine
 * replay what already happened before streaming, so nothing between the start of a run and
 * the watcher's connection is lost.
 */
export class EventWatcher {
  readonly events: DockerEvent[] = [];
  private readonly child: ChildProcess;
  private readonly closed: Promise<void>;
  private buffer = '';
  private stderr = '';

  constructor(filters: string[], sinceMs: number) {
    const args = ['events', '--since', (sinceMs / 1000).toFixed(3), '--format', '{{json .}}', ...filters.flatMap((f) => ['--filter', f])];
    this.child = spawn('docker', args, { stdio: ['ignore', 'pipe', 'pipe'] });
    this.child.stdout?.setEncoding('utf-8');
    this.child.stderr?.setEncoding('utf-8');
    this.child.stdout?.on('data', (chunk: string) => {
      this.buffer += chunk;
      let nl: number;
      while ((nl = this.buffer.indexOf('\n')) !== -1) {
        const line = this.buffer.slice(0, nl).trim();
        this.buffer = this.buffer.slice(nl + 1);
        if (line) this.events.push(JSON.parse(line) as DockerEvent);
      }
    });
    this.child.stderr?.on('data', (chunk: string) => (this.stderr += chunk));
    this.closed = new Promise((resolve) => {
      this.child.once('close', () => resolve());
      this.child.once('error', (e) => {
        this.stderr += String(e);
        resolve();
      });
    });
  }

  /** Waits until `check(events)` holds; false on timeout. */
  async waitUntil(check: (events: DockerEvent[]) => boolean, timeoutMs: number): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    while (!check(this.events)) {
      if (Date.now() > deadline) return false;
      await new Promise((r) => setTimeout(r, 50));
    }
    return true;
  }

  /** Stops the stream; throws if the CLI failed (a dead watcher must not pass as "no events"). */
  async stop(): Promise<DockerEvent[]> {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill('SIGTERM');
    await this.closed;
    if (this.stderr.trim()) throw new Error(`docker events failed: ${this.stderr.trim()}`);
    return this.events;
  }
}

/** Ids of containers created in `events`. */
export function createdIds(events: DockerEvent[]): string[] {
  return events.filter((e) => e.Type === 'container' && e.Action === 'create').map((e) => e.Actor.ID);
}

/** True when every container created in `events` was also destroyed. */
export function allDestroyed(events: DockerEvent[]): boolean {
  const destroyed = new Set(events.filter((e) => e.Type === 'container' && e.Action === 'destroy').map((e) => e.Actor.ID));
  return createdIds(events).every((id) => destroyed.has(id));
}

/** exec_create events (one per exec the plugin made). */
export function execCreates(events: DockerEvent[]): DockerEvent[] {
  return events.filter((e) => e.Type === 'container' && e.Action.startsWith('exec_create'));
}

/** The exec_die event of the exec that `execCreate` (an exec_create event) made, if it came. */
export function execDieOf(events: DockerEvent[], execCreate: DockerEvent): DockerEvent | undefined {
  const execId = execCreate.Actor.Attributes['execID'];
  return events.find((e) => e.Action === 'exec_die' && e.Actor.Attributes['execID'] === execId);
}

/** The calls genaicode forced to askQuestion: one per turn. */
export function askQuestionCalls(run: RunResult): RecordedCall[] {
  return run.calls.filter((c) => c.requiredFunctionName === E2E_HOST.dispatcher);
}

export interface FunctionAnswer {
  name: string;
  isError: boolean;
  /** The raw JSON text the model read. */
  content: string;
  value: Record<string, unknown>;
  /** The line shown to the user beside it (it names the log). */
  userText: string;
}

/**
 * The answer of the n-th (0-based) plugin action: the function response in the last user
 * item of the NEXT askQuestion call's prompt (what the model read before choosing again).
 */
export function actionAnswer(run: RunResult, n: number): FunctionAnswer {
  const next = askQuestionCalls(run)[n + 1];
  if (!next) throw new Error(`no askQuestion call #${n + 1} (${askQuestionCalls(run).length} in the run)`);
  const item = [...next.prompt].reverse().find((p) => p.type === 'user');
  const response = item?.functionResponses?.[0];
  if (!response || response.content === undefined) {
    throw new Error(`askQuestion call #${n + 1}: the last user item has no function response: ${JSON.stringify(item)?.slice(0, 500)}`);
  }
  return {
    name: response.name,
    isError: response.isError === true,
    content: response.content,
    value: JSON.parse(response.content) as Record<string, unknown>,
    userText: item?.text ?? '',
  };
}

/**
 * The model calls a plugin made for the n-th (0-based) askQuestion turn: every call after
 * that askQuestion call and before the next one.
 */
export function callsOfTurn(run: RunResult, n: number): RecordedCall[] {
  const asks = askQuestionCalls(run);
  const from = asks[n]?.index;
  if (from === undefined) throw new Error(`no askQuestion call #${n}`);
  const to = asks[n + 1]?.index ?? Number.POSITIVE_INFINITY;
  return run.calls.filter((c) => c.index > from && c.index < to);
}

/** Every file under `dir` (recursively) whose name ends with `suffix`; [] when dir is missing. */
export function filesUnder(dir: string, suffix: string): string[] {
  if (!existsSync(dir)) return [];
  const out: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, entry.name);
    if (entry.isDirectory()) out.push(...filesUnder(p, suffix));
    else if (entry.name.endsWith(suffix)) out.push(p);
  }
  return out;
}

/** The value of the owner label (genaicode-docker.owner) of a genaicode child's containers. */
export function ownerOf(pid: number): string {
  return `${hostname()}:${pid}`;
}

/** Managed containers of a genaicode child (by its owner label) still on the engine, all states. */
export async function leftOf(pid: number): Promise<string[]> {
  const r = await listManaged({ 'genaicode-docker.owner': ownerOf(pid) });
  return r.map((c) => `${c.name} (${c.status})`);
}

/** Safety net for afterAll (the tests assert that nothing is left): removes anything of these children. */
export async function removeLeftovers(pids: number[]): Promise<void> {
  for (const pid of pids) {
    const left = await listManaged({ 'genaicode-docker.owner': ownerOf(pid) });
    if (left.length) await docker(['rm', '-f', ...left.map((c) => c.id)]);
  }
}
