/**
 * The scenario scaffold of the plugin's end-to-end tests (docker-plugin.test.ts,
 * run-container-task.test.ts): the BUILT plugin (dist/plugin.js) in one genaicode child per
 * scenario, watched on the engine with `docker events` filtered on the child's owner label
 * (genaicode-docker.owner=<host>:<child pid>).
 *
 * The scenarios of a file are independent, so all of them are started at once in beforeAll
 * and each test awaits its own:
 *
 *   const scenario = setUpScenarios({
 *     childTimeoutMs: 150_000,
 *     start: (observe) => ({
 *       main: observe({ explicitPrompt: '...', script: [askQuestion('plugin:runCommand', '...'), pluginCall('runCommand', { ... }), END] }),
 *       aborted: observe({ ... }, async (child, pid) => { ...; child.kill('SIGTERM'); return { killedAt }; }),
 *     }),
 *   });
 *   test('...', async () => { const o = await scenario('main'); expectRunOk(o); ... });
 *
 * beforeAll fails without an engine or without dist/plugin.js (`npx tsc -p
 * tsconfig.build.json`). afterAll waits for every scenario, then removes whatever managed
 * container a child left (the tests assert that nothing is left: this is only the safety
 * net) and the temp projects.
 */
import path from 'node:path';
import { DIST, requireBuiltPackage } from '../../support/built-package.js';
import { requireEngine } from '../../support/engine.js';
import { allDestroyed, EventWatcher, ownerOf, removeLeftovers, type DockerEvent } from '../docker-observe.js';
import {
  askQuestion,
  createProject,
  describeRun,
  expectCall,
  functionCall,
  startGenaicode,
  type CreateProjectOptions,
  type GenaicodeProcess,
  type Json,
  type Project,
  type RunResult,
  type ScriptEntry,
} from './harness.js';

/** The built plugin, loaded by every scenario's genaicode. */
export const PLUGIN_PATH = path.join(DIST, 'plugin.js');

// ---------------------------------------------------------------------------------------
// Script pieces

/** The plugin's request for an action's arguments: one definition, no required name, the cheap tier. */
export function pluginCall(name: string, args: Record<string, Json>): ScriptEntry {
  return expectCall(name, functionCall(name, args), { expectRequiredFunction: null, expectModelType: 'cheap', label: `${name} arguments` });
}

/** The main model ends the conversation (the runner confirms it). */
export const END: ScriptEntry = askQuestion('endConversation', 'Done.');

// ---------------------------------------------------------------------------------------
// Scenarios

/** What one scenario's run left to assert on. */
export interface Observed {
  project: Project;
  run: RunResult;
  /** The child's pid: the owner label of its containers. */
  pid: number;
  /** Engine events of the run's containers (owner label), until they were all destroyed. */
  events: DockerEvent[];
  /** Whatever `during` returned. */
  extra: Record<string, unknown>;
  /** When the child process exited (Date.now() at its 'exit' event). */
  exitedAt: number;
}

/**
 * Acts on the running child (e.g. waits for a command and kills the child) and returns
 * `extra`. If it throws, the child is sent SIGTERM and the scenario fails with the error.
 */
export type During = (child: GenaicodeProcess, pid: number) => Promise<Record<string, unknown>>;

/** Runs one scenario: a temp project with the plugin, its genaicode child, the engine events. */
export type Observe = (
  options: Omit<CreateProjectOptions, 'plugins'> & { env?: Record<string, string | undefined> },
  during?: During,
) => Promise<Observed>;

export interface ScenarioOptions<S> {
  /** Each child is killed (SIGKILL) after this long. */
  childTimeoutMs: number;
  /** Starts every scenario (without awaiting any) and returns their promises by name. */
  start: (observe: Observe) => S;
  /** More cleanup for afterAll, once every scenario has settled (before the leftovers are removed). */
  cleanup?: () => Promise<unknown>;
}

/**
 * Registers the file's beforeAll (start every scenario) and afterAll (settle, remove
 * leftovers, clean up), and returns the accessor of a scenario by name.
 */
export function setUpScenarios<S extends Record<string, Promise<Observed>>>(
  options: ScenarioOptions<S>,
): <K extends keyof S>(name: K) => S[K] {
  const projects: Project[] = [];
  const pids: number[] = [];
  let scenarios: S | undefined;

  const observe: Observe = async (projectOptions, during) => {
    const { env, ...createOptions } = projectOptions;
    const project = await createProject({ plugins: [PLUGIN_PATH], ...createOptions });
    projects.push(project);
    const since = Date.now() - 1000;
    const child = startGenaicode(project, { timeoutMs: options.childTimeoutMs, ...(env ? { env } : {}) });
    const pid = child.pid;
    if (pid === undefined) throw new Error(`genaicode did not spawn: ${describeRun(await child.result)}`);
    pids.push(pid);
    let exitedAt = Number.NaN;
    child.once('exit', () => (exitedAt = Date.now()));
    const watcher = new EventWatcher([`label=genaicode-docker.owner=${ownerOf(pid)}`], since);
    let extra: Record<string, unknown> = {};
    let failure: unknown;
    if (during) {
      try {
        extra = await during(child, pid);
      } catch (e) {
        failure = e;
        child.kill('SIGTERM');
        setTimeout(() => child.kill('SIGTERM'), 3000).unref();
      }
    }
    const result = await child.result;
    // Removal may finish a moment after the child is gone: wait for every destroy event.
    await watcher.waitUntil(allDestroyed, 10_000);
    await new Promise((r) => setTimeout(r, 300)); // stragglers of the stream
    const events = await watcher.stop();
    if (failure) throw new Error(`${failure instanceof Error ? failure.message : String(failure)}\n${describeRun(result)}`);
    return { project, run: result, pid, events, extra, exitedAt };
  };

  beforeAll(async () => {
    await requireEngine();
    requireBuiltPackage(PLUGIN_PATH);
    scenarios = options.start(observe);
    // Each test awaits its own scenario; mark them handled so an early failure is not "unhandled".
    for (const p of Object.values(scenarios)) p.catch(() => undefined);
  }, 60_000);

  afterAll(async () => {
    if (scenarios) await Promise.allSettled(Object.values(scenarios));
    await options.cleanup?.();
    await removeLeftovers(pids);
    await Promise.all(projects.map((p) => p.cleanup()));
  }, 60_000);

  return (name) => {
    if (!scenarios) throw new Error('the scenarios were not started (see beforeAll)');
    return scenarios[name];
  };
}

/** Fails (with the run's summary) unless genaicode exited 0 having used the whole script. */
export function expectRunOk(o: Observed): void {
  if (o.run.exitCode !== 0 || o.run.unusedScriptEntries !== 0) throw new Error(describeRun(o.run));
}
