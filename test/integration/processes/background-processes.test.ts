/**
 * Background processes against a real engine: a flood, a stdin reader, a daemon that forks
 * away (setsid, double fork) and one that ignores SIGTERM are each read, fed and stopped,
 * with nothing of them left in the container's process list; a command past its yieldMs is
 * handed over; a port is waited for; a process the model forgets ends with its container.
 */
import { readFileSync } from 'node:fs';
import type { Sandbox } from '../../../src/index.js';
import type { ProcessStarted } from '../../../src/processes/process-table.js';
import type { ExecResult } from '../../../src/commands/exec-types.js';
import { dockerOk, engineSuite, MINIMAL_IMAGE, waitFor, withManager } from '../../support/engine.js';
import { get } from 'node:http';

engineSuite('background-processes');

/** The container's process command lines (busybox ps), without ps itself. */
async function commandLines(sb: Sandbox): Promise<string[]> {
  const r = await sb.exec(['ps', '-o', 'args']);
  expect(r.exitCode).toBe(0);
  return r.stdout
    .split('\n')
    .slice(1)
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('ps -o'));
}

function isHandle(r: ExecResult | ProcessStarted): r is ProcessStarted {
  return 'processId' in r;
}

async function started(sb: Sandbox, cmd: string): Promise<ProcessStarted> {
  const r = await sb.exec(cmd, { background: true });
  if (!isHandle(r)) throw new Error(`not handed over: ${JSON.stringify(r)}`);
  return r;
}

const withSandbox = <T>(fn: (sb: Sandbox) => Promise<T>, overrides = {}) =>
  withManager(async (manager) => fn(await manager.start({ image: MINIMAL_IMAGE })), { overrides });

describe('each kind of process is read, fed and stopped, and nothing of it is left', () => {
  test.concurrent('a flood: reads are capped, lines gone from memory are counted, the stop is verified', async () => {
    await withSandbox(async (sb) => {
      const p = await started(sb, 'yes flood-line-with-some-width');
      expect(p).toMatchObject({ processId: 'p1', status: 'running' });
      // Past the in-memory window (1 MiB): the early lines are only in the log.
      await sb.waitForOutput(p.processId, 'flood', 10_000);
      let out = sb.readProcessOutput(p.processId);
      for (let i = 0; i < 100 && out.toLine < 200_000; i++) {
        await new Promise((r) => setTimeout(r, 100));
        out = sb.readProcessOutput(p.processId, 0);
      }
      expect(out.toLine).toBeGreaterThan(100_000);
      expect(out.truncated).toBe(true);
      expect(out.missed).toBeGreaterThan(0);
      expect(out.output.length).toBeLessThan(40_000);
      expect(out.output).toContain('omitted');
      const stop = await sb.stopProcess(p.processId);
      expect(stop).toMatchObject({ status: 'stopped', verified: true });
      expect((await commandLines(sb)).filter((l) => l.startsWith('yes'))).toEqual([]);
      expect(readFileSync(p.logPath, 'utf8').startsWith('flood-line-with-some-width\n')).toBe(true);
    });
  });

  test.concurrent('a stdin reader: fed line by line, then its input closed, and it ends by itself', async () => {
    await withSandbox(async (sb) => {
      const p = await started(sb, 'while read -r l; do echo "got:$l"; done; echo bye');
      expect(sb.writeProcessInput(p.processId, 'first\nsecond\n')).toMatchObject({ bytes: 13, status: 'running' });
      const hit = await sb.waitForOutput(p.processId, 'got:second', 10_000);
      expect(hit).toMatchObject({ found: true, line: 2, text: 'got:second' });
      expect(sb.readProcessOutput(p.processId)).toMatchObject({ fromLine: 1, toLine: 2, output: 'got:first\ngot:second\n' });
      sb.writeProcessInput(p.processId, 'last\n', true);
      expect(await sb.waitForOutput(p.processId, 'bye', 10_000)).toMatchObject({ found: true, line: 4 });
      // Read since line 2: the lines after it; and the end, with its exit code.
      await sb.whenIdle(100);
      for (let i = 0; i < 50 && sb.listProcesses()[0]!.status === 'running'; i++) await new Promise((r) => setTimeout(r, 100));
      expect(sb.readProcessOutput(p.processId, 2)).toMatchObject({ status: 'exited', exitCode: 0, output: 'got:last\nbye\n' });
      expect(() => sb.writeProcessInput(p.processId, 'more\n')).toThrow(/takes no more input/);
    });
  });

  test.concurrent('a daemon that leaves with setsid and a double fork: the stop finds all of it', async () => {
    await withSandbox(async (sb) => {
      const p = await started(
        sb,
        "setsid sh -c 'sleep 2001 & sleep 2002' & sh -c '(sleep 2003 &) &' & (trap '' HUP; exec sleep 2004) >/dev/null 2>&1 & echo up; sleep 2000",
      );
      await sb.waitForOutput(p.processId, 'up', 10_000);
      const before = await commandLines(sb);
      for (const n of [2000, 2001, 2002, 2003, 2004]) expect(before).toContain(`sleep ${n}`);
      expect(await sb.stopProcess(p.processId)).toMatchObject({ status: 'stopped', verified: true });
      expect((await commandLines(sb)).filter((l) => /sleep 200\d/.test(l))).toEqual([]);
    });
  });

  test.concurrent('one that ignores SIGTERM is stopped all the same', async () => {
    await withSandbox(async (sb) => {
      const p = await started(sb, "trap '' TERM INT HUP; echo ready; while :; do sleep 1; done");
      await sb.waitForOutput(p.processId, 'ready', 10_000);
      expect(await sb.stopProcess(p.processId)).toMatchObject({ status: 'stopped', verified: true });
      expect((await commandLines(sb)).filter((l) => l.includes("trap '' TERM INT HUP") || l === 'sleep 1')).toEqual([]);
      // A second stop says so and changes nothing.
      expect(await sb.stopProcess(p.processId)).toMatchObject({ status: 'stopped', verified: true });
    });
  });
});

describe('handing over, waiting, limits', () => {
  test.concurrent('yieldMs: a quick command answers as any command; a slow one with its handle and output so far', async () => {
    await withSandbox(async (sb) => {
      const quick = await sb.exec('echo quick', { yieldMs: 10_000 });
      expect(isHandle(quick)).toBe(false);
      expect(quick).toMatchObject({ exitCode: 0, stdout: 'quick\n' });
      const slow = await sb.exec('echo slow-start; sleep 3000', { yieldMs: 1_000 });
      expect(slow).toMatchObject({ status: 'running', outputSoFar: 'slow-start\n' });
      expect(sb.listProcesses().map((p) => p.command)).toEqual(['echo slow-start; sleep 3000']);
    });
  });

  test.concurrent('waitForPort sees a server listen (from /proc/net/tcp), a request reaches it, its log has it', async () => {
    await withSandbox(async (sb) => {
      await sb.exec('mkdir -p /tmp/www && echo hello-from-httpd > /tmp/www/index.html');
      expect(await sb.waitForPort(8080, 300)).toMatchObject({ port: 8080, listening: false });
      const p = await started(sb, 'httpd -f -vv -p 8080 -h /tmp/www');
      expect(await sb.waitForPort(8080, 10_000)).toMatchObject({ port: 8080, listening: true });
      const r = await sb.exec('wget -qO- http://127.0.0.1:8080/');
      expect(r.stdout).toBe('hello-from-httpd\n');
      expect(await sb.waitForOutput(p.processId, 'response:200', 10_000)).toMatchObject({ found: true });
      expect(await sb.stopProcess(p.processId)).toMatchObject({ verified: true });
      expect((await commandLines(sb)).filter((l) => l.startsWith('httpd'))).toEqual([]);
    });
  });

  test.concurrent('publishPorts: the server is reached from the host on 127.0.0.1 only, at the address the answers say', async () => {
    await withSandbox(
      async (sb) => {
        const address = sb.info.ports?.['8080'];
        expect(address).toMatch(/^127\.0\.0\.1:\d+$/);
        // The engine bound it on the loopback alone: no other interface, no other port.
        expect((await dockerOk(['port', sb.id])).trim()).toBe(`8080/tcp -> ${address}`);
        await sb.exec('mkdir -p /tmp/www && echo hello-from-the-container > /tmp/www/index.html');
        const p = await started(sb, 'httpd -f -p 8080 -h /tmp/www');
        expect(await sb.waitForPort(8080, 10_000)).toMatchObject({ listening: true });
        const body = await new Promise<string>((resolve, reject) => {
          get(`http://${address}/`, (res) => {
            let text = '';
            res.on('data', (c: Buffer) => (text += c.toString()));
            res.on('end', () => resolve(text));
          }).on('error', reject);
        });
        expect(body).toBe('hello-from-the-container\n');
        expect(await sb.stopProcess(p.processId)).toMatchObject({ verified: true });
      },
      { network: 'bridge', publishPorts: [8080] },
    );
  });

  test.concurrent('past exec.maxProcesses a start is refused with a sentence; a stopped one frees its place', async () => {
    await withSandbox(
      async (sb) => {
        const a = await started(sb, 'sleep 4001');
        await started(sb, 'sleep 4002');
        await expect(sb.exec('sleep 4003', { background: true })).rejects.toMatchObject({
          code: 'INVALID_ARGUMENT',
          message: expect.stringMatching(/already runs 2 background processes.*exec\.maxProcesses/),
        });
        await sb.stopProcess(a.processId);
        // The refused start took no id.
        expect(await started(sb, 'sleep 4004')).toMatchObject({ processId: 'p3' });
      },
      { exec: { maxProcesses: 2 } },
    );
  });

  test.concurrent("a command's timeout spares a background process started while it ran, and the daemon it left", async () => {
    await withSandbox(async (sb) => {
      let fgEnded = false;
      const fg = sb.exec('sleep 5001', { timeoutMs: 10_000 }).finally(() => (fgEnded = true));
      await waitFor('the command to run', async () => ((await commandLines(sb)).includes('sleep 5001') ? true : undefined), 30_000);
      // The daemon is re-parented to init and started after the command: only its mark says whose it is.
      const p = await started(sb, "setsid sh -c 'sleep 5002 &'; sleep 5003");
      await waitFor(
        'the daemon and the process',
        async () => {
          const up = await commandLines(sb);
          return up.includes('sleep 5002') && up.includes('sleep 5003') ? true : undefined;
        },
        30_000,
      );
      // All up while the command still ran: its timeout came after them.
      expect(fgEnded).toBe(false);
      expect((await fg).timedOut).toBe(true);
      const left = await commandLines(sb);
      expect(left).not.toContain('sleep 5001');
      expect(left).toContain('sleep 5002');
      expect(left).toContain('sleep 5003');
      expect(sb.listProcesses()[0]).toMatchObject({ processId: p.processId, status: 'running' });
    });
  });

  test.concurrent("a process's stop spares the daemon of another process started after it", async () => {
    await withSandbox(async (sb) => {
      const first = await started(sb, 'sleep 7001');
      await started(sb, "setsid sh -c 'sleep 7002 &'; sleep 7003");
      for (let i = 0; i < 50 && !(await commandLines(sb)).includes('sleep 7002'); i++) await new Promise((r) => setTimeout(r, 100));
      expect(await sb.stopProcess(first.processId)).toMatchObject({ verified: true });
      const left = await commandLines(sb);
      expect(left).not.toContain('sleep 7001');
      expect(left).toContain('sleep 7002');
      expect(left).toContain('sleep 7003');
    });
  });

  test.concurrent('a forgotten process ends with its container, whose stop lists it', async () => {
    await withManager(async (manager) => {
      const sb = await manager.start({ image: MINIMAL_IMAGE });
      const p = await started(sb, 'sleep 6001');
      await sb.stop();
      expect(sb.stoppedProcesses).toMatchObject([{ processId: p.processId, command: 'sleep 6001', status: 'stopped' }]);
      expect(manager.list()).toEqual([]);
      await expect(sb.exec('sleep 1', { background: true })).rejects.toMatchObject({ code: 'CONTAINER_NOT_FOUND' });
      for (let i = 0; i < 50 && sb.listProcesses()[0]!.status === 'running'; i++) await new Promise((r) => setTimeout(r, 100));
      expect(sb.listProcesses()[0]!.status).toBe('stopped');
    });
  });
});
