/**
 * Input a background process never reads: what the engine's connection cannot take waits in
 * the plugin's memory, so the input written and not yet taken is capped, and a write past the
 * cap is a clear refusal, never memory grown by every call.
 */
import type { Sandbox } from '../../../src/index.js';
import type { ProcessStarted } from '../../../src/processes/process-table.js';
import { SandboxError } from '../../../src/errors.js';
import { engineSuite, MINIMAL_IMAGE, withManager } from '../../support/engine.js';

engineSuite('process-input-backlog');

const CHUNK = 'z'.repeat(64 * 1024 - 1) + '\n';

async function started(sb: Sandbox, cmd: string): Promise<ProcessStarted> {
  const r = await sb.exec(cmd, { background: true });
  if (!('processId' in r)) throw new Error(`not handed over: ${JSON.stringify(r)}`);
  return r;
}

/** Writes CHUNK up to `times` times; the error of the first refused write, or undefined. */
function writeUntilRefused(sb: Sandbox, processId: string, times: number): { error?: SandboxError; written: number } {
  let written = 0;
  for (let i = 0; i < times; i++) {
    try {
      written += sb.writeProcessInput(processId, CHUNK).bytes;
    } catch (e) {
      if (e instanceof SandboxError) return { error: e, written };
      throw e;
    }
  }
  return { written };
}

const withSandbox = <T>(fn: (sb: Sandbox) => Promise<T>) =>
  withManager(async (manager) => fn(await manager.start({ image: MINIMAL_IMAGE })));

describe('input a process does not read is capped in the plugin', () => {
  test.concurrent.each([
    ['a process that never reads its input', 'sleep 300'],
    ['a process that stops itself before reading', 'kill -STOP $$; cat'],
    ['a reader stopped by another of its processes', 'sh -c "kill -STOP \\$PPID" & exec cat > /dev/null'],
  ])(
    '%s: a write past the backlog is refused with a sentence, the process still runs',
    async (_name, cmd) => {
      await withSandbox(async (sb) => {
        const p = await started(sb, cmd);
        // 64 writes of 64 KiB: 4 MiB, far past what the engine's connection and a pipe hold.
        const r = writeUntilRefused(sb, p.processId, 64);
        expect(r.error).toBeDefined();
        expect(r.error).toMatchObject({ code: 'INVALID_ARGUMENT' });
        expect(r.error!.message).toMatch(/has not read/);
        expect(r.written).toBeLessThan(4 * 1024 * 1024);
        expect(sb.listProcesses()[0]).toMatchObject({ processId: p.processId, status: 'running' });
        expect(await sb.stopProcess(p.processId)).toMatchObject({ status: 'stopped', verified: true });
      });
    },
    120_000,
  );

  test.concurrent(
    'a process that reads its input takes every write',
    async () => {
      await withSandbox(async (sb) => {
        const p = await started(sb, 'cat > /dev/null');
        let written = 0;
        for (let i = 0; i < 64; i++) {
          written += sb.writeProcessInput(p.processId, CHUNK).bytes;
          // Give the reader its turn, as a model's calls do.
          if (i % 8 === 7) await new Promise((res) => setTimeout(res, 200));
        }
        expect(written).toBe(64 * CHUNK.length);
        await sb.stopProcess(p.processId);
      });
    },
    120_000,
  );
});

test.concurrent(
  'a first input larger than the backlog, given with the start, is taken whole and the process is listed',
  async () => {
    await withSandbox(async (sb) => {
      const first = CHUNK.repeat(24);
      const r = await sb.exec('wc -c', { background: true, stdin: first });
      if (!('processId' in r)) throw new Error('not handed over');
      sb.writeProcessInput(r.processId, '', true);
      expect(await sb.waitForOutput(r.processId, String(first.length), 30_000)).toMatchObject({ found: true });
    });
  },
  120_000,
);
