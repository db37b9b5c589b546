/**
 * A command that stops every other process in its container (`kill -STOP -1`) also stops the
 * runtime's own process that sets up the next exec there (runc init), and the engine then
 * holds its lock on the container until the keep-alive ends: no exec, inspect, kill or
 * removal answers. Nothing of ours may wait on it for good: the command's answer comes, says
 * why, later calls say the container is gone, and a stop returns.
 */
import { MINIMAL_IMAGE, withManager, engineSuite } from '../../support/engine.js';

engineSuite('frozen-engine');

/** Short, so that the wedged container ends by itself soon after the test (its keep-alive). */
const TTL = 90;
/** A generous bound that proves nothing hangs (each wait of ours is 15 s at most). */
const ANSWER_BOUND_MS = 120_000;

test.concurrent.each([
  ['a command that keeps stopping everything', 'while :; do kill -STOP -1 2>/dev/null; done'],
  ['a daemon that keeps stopping everything, and a command that waits', '(while :; do kill -STOP -1 2>/dev/null; done) & sleep 1000'],
  ['one stop of everything, then a wait', 'kill -STOP -1; sleep 1000'],
])(
  'a container that freezes the engine: %s. The answer comes and says why; the sandbox is then gone; a stop returns',
  async (_what, command) => {
    await withManager(async (manager) => {
      const sb = await manager.start({ image: MINIMAL_IMAGE, ttlSeconds: TTL });
      const started = Date.now();
      const r = await sb.exec(command, { timeoutMs: 3000 });
      expect(Date.now() - started).toBeLessThan(ANSWER_BOUND_MS);
      expect(r.timedOut).toBe(true);
      // Frozen or not (a stop of everything can miss a runc init that was not there yet), the
      // answer is a timeout; when the engine stopped answering, it says so and nothing more is asked.
      if (/stopped answering/.test(r.reason ?? '')) {
        await expect(sb.exec('echo next')).rejects.toMatchObject({ code: 'CONTAINER_NOT_FOUND', data: { unanswered: true } });
      }
      const stopping = Date.now();
      await sb.stop().catch((e: unknown) => expect(e).toMatchObject({ code: 'CONTAINER_NOT_FOUND' }));
      expect(Date.now() - stopping).toBeLessThan(ANSWER_BOUND_MS);
    });
  },
  400_000,
);
