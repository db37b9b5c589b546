/**
 * A command that stops every other process in its container (`kill -STOP -1`) also stops the
 * runtime's own process that sets up the next exec there (runc init), and the engine then
 * holds its lock on the container until the keep-alive ends: no exec, inspect, kill or
 * removal answers. Nothing of ours may wait on it for good: the command's answer comes, says
 * why, later calls say the container is gone, and a stop returns.
 */
import { readFileSync } from 'node:fs';
import { MINIMAL_IMAGE, withManager, engineSuite } from '../../support/engine.js';

/**
 * The stop reaches the keep-alive too: such a container never ends by itself, and the engine
 * cannot end it. The test ends it from the host, as root, through its cgroup's processes.
 */
const wedged: string[] = [];
function killOnHost(id: string): void {
  const tasks = readFileSync(`/sys/fs/cgroup/pids/docker/${id}/tasks`, 'utf8').split('\n').filter(Boolean);
  for (const pid of tasks) {
    try {
      process.kill(Number(pid), 'SIGKILL');
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ESRCH') throw e; // ended meanwhile
    }
  }
}

engineSuite('frozen-engine', {
  afterAll: () => {
    const failed: string[] = [];
    for (const id of wedged) {
      try {
        killOnHost(id);
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'ENOENT') failed.push(`${id}: ${String(e)}`);
      }
    }
    if (failed.length) throw new Error(`could not end the wedged containers from the host (run as root): ${failed.join('; ')}`);
  },
});

const TTL = 600;
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
      wedged.push(sb.id);
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
