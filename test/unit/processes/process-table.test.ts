import { SandboxManager } from '../../../src/sandbox/sandbox-manager.js';
import { FakeEngine, out } from '../../support/fake-engine.js';
import { removeTempDirs, testConfig } from '../helpers.js';
import { DEFAULT_IMAGE } from '../../../src/config/config-schema.js';
import type { ExecResult } from '../../../src/commands/exec-types.js';
import type { ProcessStarted } from '../../../src/processes/process-table.js';

const managers: SandboxManager[] = [];
afterEach(async () => {
  for (const m of managers.splice(0)) await m[Symbol.asyncDispose]();
});
afterAll(removeTempDirs);

/** A sandbox on the fake engine whose commands print a line and run until killed. */
async function sandbox(maxProcesses = 2) {
  const engine = new FakeEngine({ images: [DEFAULT_IMAGE], script: () => ({ frames: [out('up\n')], exitCode: 0, hangUntilKilled: true }) });
  const manager = new SandboxManager({
    config: testConfig({ exec: { maxProcesses } }),
    engine,
    sessionId: 'procs-unit',
    sweepOnStart: false,
  });
  managers.push(manager);
  return { engine, sb: await manager.start({ project: 'none' }) };
}

const isHandle = (r: ExecResult | ProcessStarted): r is ProcessStarted => 'processId' in r;

describe('the process table', () => {
  test('starts at the same moment cannot pass the limit together: a start in flight counts', async () => {
    const { sb } = await sandbox(2);
    const results = await Promise.allSettled([1, 2, 3].map((n) => sb.exec(`sleep ${n}`, { background: true })));
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(2);
    const refused = results.filter((r) => r.status === 'rejected');
    expect(refused).toHaveLength(1);
    expect((refused[0] as PromiseRejectedResult).reason).toMatchObject({ code: 'INVALID_ARGUMENT' });
  });

  test('an unknown process id is a clear error naming the ones there are; a background process never uses the kept shell', async () => {
    const { sb, engine } = await sandbox();
    const started = await sb.exec('server', { background: true });
    expect(isHandle(started) && started.processId).toBe('p1');
    expect(() => sb.readProcessOutput('p9')).toThrow(/No background process "p9" in this container; its processes: p1/);
    // Its own wrapped exec, with its stdin a stream kept open and a mark of its own.
    const exec = engine.execs.find((e) => e.kind === 'command')!;
    expect(exec.spec.background).toBe(true);
    expect(typeof (exec.spec.stdin as AsyncIterable<Buffer>)[Symbol.asyncIterator]).toBe('function');
    expect(exec.spec.env?.some((v) => v.startsWith('GENAICODE_DOCKER_EXEC='))).toBe(true);
    // A first input given with the start is written, and the input stays open for more.
    await sb.exec('reader', { background: true, stdin: 'first\n' });
    const input = engine.execs.filter((e) => e.kind === 'command')[1]!.spec.stdin as AsyncIterable<Buffer>;
    const it = input[Symbol.asyncIterator]();
    expect(String((await it.next()).value)).toBe('first\n');
    sb.writeProcessInput('p2', 'more\n');
    expect(String((await it.next()).value)).toBe('more\n');
  });

  test('the stop kills by the process mark and reports it; the container stop lists what still ran', async () => {
    const { sb, engine } = await sandbox();
    const a = await sb.startProcess('one');
    await sb.startProcess('two');
    expect(await sb.stopProcess(a.processId)).toMatchObject({ status: 'stopped', verified: true });
    const kill = engine.execs.find((e) => e.kind === 'kill-tree')!;
    const mark = engine.execs.find((e) => e.kind === 'command')!.spec.env![0]!;
    expect(kill.spec.cmd).toContain(mark);
    // Only its own mark: the other process (a mark of its own, not below it) runs on.
    const other = engine.execs.filter((e) => e.kind === 'command')[1]!;
    expect(kill.spec.cmd.join(' ')).not.toContain(other.spec.env![0]!);
    expect(other.state).toBe('running');
    await sb.stop();
    expect(sb.stoppedProcesses.map((p) => p.command)).toEqual(['two']);
  });
});
