/**
 * Child processes that own a sandbox: `test/integration/fixtures/exit-hook-child.mjs` starts
 * one through the built package (dist/), prints its container id, then ends the way a test
 * asks. Used by the exit-hook tests and the sweep tests.
 */
import { spawn, type ChildProcessByStdio } from 'node:child_process';
import { dirname, join } from 'node:path';
import type { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { inspectContainer, newTestSessionId, waitFor } from './engine.js';
import { tempDir } from './temp-dirs.js';

const HERE = dirname(fileURLToPath(import.meta.url));
const FIXTURE = join(HERE, '..', 'integration', 'fixtures', 'exit-hook-child.mjs');

export type ChildMode = 'wait' | 'end' | 'throw' | 'reject' | 'exit';

export interface Child {
  proc: ChildProcessByStdio<null, Readable, Readable>;
  /** Its container. */
  id: string;
  pid: number;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  stderr: () => string;
}

const children: Child[] = [];

/** For an afterAll: SIGKILLs every child started by this file that is still running. */
export function killChildren(): void {
  for (const c of children) if (c.proc.exitCode === null && c.proc.signalCode === null) c.proc.kill('SIGKILL');
}

/** Starts the fixture and waits for the id of its container, which the fixture saw running. */
export async function startChild(mode: ChildMode): Promise<Child> {
  const proc = spawn(process.execPath, [FIXTURE, mode, newTestSessionId(), tempDir()], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, NODE_OPTIONS: '' },
  });
  let out = '';
  let err = '';
  proc.stderr.on('data', (d: Buffer) => (err += d.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    // 'close', not 'exit': after its output too (under load the last of stderr can come after 'exit').
    proc.once('close', (code, signal) => resolve({ code, signal })),
  );
  const line = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`fixture (${mode}) printed no id within 30 s; stderr: ${err}`)), 30_000);
    proc.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      const nl = out.indexOf('\n');
      if (nl !== -1) {
        clearTimeout(timer);
        resolve(out.slice(0, nl));
      }
    });
    void exited.then(({ code, signal }) => {
      clearTimeout(timer);
      if (!out.includes('\n'))
        reject(new Error(`fixture (${mode}) ended (code ${code}, signal ${signal}) before printing an id; stderr: ${err}`));
    });
  });
  const { id, pid, running } = JSON.parse(line) as { id: string; pid: number; running: boolean };
  const child: Child = { proc, id, pid, exited, stderr: () => err };
  children.push(child);
  if (pid !== proc.pid) throw new Error(`fixture (${mode}) reported pid ${pid}, but it is ${proc.pid}`);
  if (!running) throw new Error(`fixture (${mode}): its container ${id.slice(0, 12)} was not running`);
  // A child that waits to be killed: its container must still run now, as seen from here.
  if (mode === 'wait' && !(await inspectContainer(id))?.State.Running)
    throw new Error(`fixture (wait): its container ${id.slice(0, 12)} is not running`);
  return child;
}

export async function expectGoneSoon(id: string): Promise<void> {
  await waitFor(`container ${id.slice(0, 12)} to be removed`, async () => ((await inspectContainer(id)) ? undefined : true), 5000, 100);
}
