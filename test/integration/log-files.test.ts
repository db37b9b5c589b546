/**
 * Command logs on disk, with real commands: one log and one metadata file per command
 * under the session's folder; retention that never deletes a live session's logs; and a
 * log that cannot be written never crashes the process. Tests run in sequence: an
 * uncaught error must be blamed on the test that caused it.
 */
import { existsSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { SandboxManager } from '../../src/index.js';
import { SESSION_MARKER } from '../../src/capture/session-folders.js';
import { newTestSessionId, withManager, engineSuite } from '../support/engine.js';
import { testConfig } from '../support/temp-dirs.js';

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
