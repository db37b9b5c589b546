/**
 * Command logs on disk, with real commands: one log and one metadata file per command
 * under the session's folder; retention that never deletes a live session's logs; and a
 * log that cannot be written never crashes the process. Tests run in sequence: an
 * uncaught error must be blamed on the test that caused it.
 */
import { existsSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { SandboxManager } from '../../../src/index.js';
import { answerForModel, buildCommandAnswer } from '../../../src/answer/command-answer.js';
import { SESSION_MARKER } from '../../../src/capture/session-folders.js';
import { newTestSessionId, withManager, engineSuite } from '../../support/engine.js';
import { testConfig } from '../../support/temp-dirs.js';

engineSuite('log-files');

test('one log and one metadata file per command, in the session folder under logs.dir', async () => {
  await withManager(async (manager, config) => {
    const sb = await manager.start();
    const a = await sb.exec('echo first; echo oops >&2; exit 4', { label: 'my label/with spaces' });
    const b = await sb.exec(['printf', 'second']);
    expect(dirname(a.logPath)).toBe(join(config.logs.dir, manager.sessionId));
    expect(config.logs.dir).toBe(join(config.projectRoot, 'logs'));
    expect(a.logPath).not.toBe(b.logPath);
    expect(readFileSync(b.logPath, 'utf8')).toBe('second');
    expect(readFileSync(a.logPath, 'utf8').split('\n').sort()).toEqual(['', 'first', 'oops']);
    const meta = JSON.parse(readFileSync(a.logPath.replace(/\.log$/, '.json'), 'utf8')) as Record<string, unknown>;
    expect(meta).toMatchObject({
      command: 'echo first; echo oops >&2; exit 4',
      exitCode: 4,
      bytes: { stdout: 6, stderr: 5 },
      image: sb.info.image,
      container: sb.name,
    });
    expect(meta.stdout).toBeUndefined();
    expect(readdirSync(dirname(a.logPath)).sort()).toEqual(
      [
        SESSION_MARKER,
        ...[a.logPath, a.logPath.replace(/\.log$/, '.json'), b.logPath, b.logPath.replace(/\.log$/, '.json')].map((p) =>
          p.slice(dirname(p).length + 1),
        ),
      ].sort(),
    );
  });
}, 60_000);

test("retention never deletes a live session's logs (two sessions sharing one project)", async () => {
  // Both managers use one project root, as two genaicode processes on one project would.
  const config = testConfig({ logs: { maxTotalBytes: '1m' } });
  await withManager(
    async (first) => {
      const a = await first.start();
      const big = await a.exec("head -c 2097152 /dev/zero | tr '\\0' x");
      expect(big.bytes.stdout).toBe(2097152);
      expect(existsSync(big.logPath)).toBe(true);
      await withManager(
        async (second) => {
          const b = await second.start();
          await b.exec('echo from the second session');
        },
        { config, sessionId: newTestSessionId() },
      );
      // The first session is still live: the log its answer points to must still be there.
      expect(existsSync(big.logPath)).toBe(true);
    },
    { config, sessionId: newTestSessionId() },
  );
}, 60_000);

test('a log that cannot be written (its folder removed behind our back) does not crash the process', async () => {
  const config = testConfig();
  const manager = new SandboxManager({ config, sessionId: newTestSessionId(), sweepOnStart: false });
  const uncaught: unknown[] = [];
  const onUncaught = (e: unknown) => uncaught.push(e);
  // Jest turns an uncaught error into a failure of the running test; record it too, to say which.
  process.prependListener('uncaughtException', onUncaught);
  try {
    const sb = await manager.start();
    const first = await sb.exec('echo one');
    rmSync(dirname(first.logPath), { recursive: true, force: true });
    let second: Awaited<ReturnType<typeof sb.exec>> | undefined;
    let thrown: unknown;
    try {
      second = await sb.exec('echo two');
    } catch (e) {
      thrown = e;
    }
    await new Promise((r) => setTimeout(r, 200));
    expect(uncaught.map((e) => (e instanceof Error ? e.message : String(e)))).toEqual([]);
    // Either a result (the log could not be kept) or a SandboxError; never a crash.
    if (second) expect(second).toMatchObject({ exitCode: 0, stdout: 'two\n' });
    else expect(thrown).toMatchObject({ name: 'SandboxError' });
  } finally {
    process.removeListener('uncaughtException', onUncaught);
    await manager[Symbol.asyncDispose]();
  }
}, 60_000);

describe('a command that prints without end cannot fill the disk through its log', () => {
  const MiB = 1024 ** 2;
  // What runaway commands look like: a flood on stdout, one on stderr, both interleaved, and one that never ends.
  test.each([
    ['stdout', 'dd if=/dev/zero bs=1048576 count=40 2>/dev/null', { timeoutMs: 60_000 }, 40 * MiB],
    ['stderr', 'dd if=/dev/zero bs=1048576 count=40 >&2 2>/dev/null; dd if=/dev/zero bs=1048576 count=40 >&2', { timeoutMs: 60_000 }, 0],
    ['both streams interleaved', 'yes out | head -c 20971520 & yes err | head -c 20971520 >&2; wait', { timeoutMs: 60_000 }, 40 * MiB],
    ['a command that never ends, stopped by its timeout', 'yes', { timeoutMs: 3000 }, 0],
  ])(
    '%s',
    async (_name, cmd, options, exactBytes) => {
      await withManager(
        async (manager) => {
          const sb = await manager.start();
          const r = await sb.exec(cmd, options);
          const total = r.bytes.stdout + r.bytes.stderr;
          if (exactBytes) expect(total).toBe(exactBytes);
          else expect(total).toBeGreaterThan(4 * MiB);
          const log = readFileSync(r.logPath);
          expect(log.length).toBeLessThan(2 * MiB + 1024);
          expect(log.toString('latin1')).toContain(`${total - 2 * MiB} bytes in the middle were dropped (logs.maxCommandBytes`);
          expect(r.logCut).toContain(`${total - 2 * MiB} bytes in the middle were dropped`);
          // The answer says it too, and the metadata beside the log.
          const answer = answerForModel(await buildCommandAnswer(r));
          expect(answer.logCut).toBe(r.logCut);
          expect(JSON.parse(readFileSync(r.logPath.replace(/\.log$/, '.json'), 'utf8'))).toMatchObject({ logCut: r.logCut });
          // Nothing else was left beside it (the tail's ring is removed).
          expect(readdirSync(dirname(r.logPath)).filter((f) => f.endsWith('.log'))).toEqual([
            r.logPath.slice(dirname(r.logPath).length + 1),
          ]);
        },
        { overrides: { logs: { maxCommandBytes: '2m' } } },
      );
    },
    120_000,
  );

  test("the session's logs together stay under logs.maxSessionBytes", async () => {
    await withManager(
      async (manager) => {
        const sb = await manager.start();
        const results = [];
        for (let i = 0; i < 4; i++) results.push(await sb.exec('dd if=/dev/zero bs=1048576 count=3 2>/dev/null'));
        const sizes = results.map((r) => readFileSync(r.logPath).length);
        expect(sizes.reduce((a, b) => a + b, 0)).toBeLessThan(5 * MiB + 4096);
        expect(results[3]!.logCut).toContain('logs.maxSessionBytes');
        expect(results.every((r) => r.bytes.stdout === 3 * MiB)).toBe(true);
      },
      { overrides: { logs: { maxCommandBytes: '4m', maxSessionBytes: '5m' } } },
    );
  }, 120_000);
});
