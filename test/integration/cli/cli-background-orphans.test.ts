/**
 * A background job whose supervisor is killed with SIGKILL: its container is an orphan that
 * `ps` names and `kill` or the sweep removes. Run alone (scripts/jest.sh), as the sweep tests
 * are: a start-up sweep of another file's CLI would remove the orphan before it is looked at.
 */
import { alive, cliWith, containerThere, jobsSuite, rows, start } from '../../support/background-jobs.js';
import { waitFor } from '../../support/engine.js';

jobsSuite();

test('a supervisor killed with SIGKILL leaves an orphan: ps says so, kill removes it, and so does the sweep', async () => {
  const cli = cliWith();
  const [a, b] = [start(cli, 'sleep 1000'), start(cli, 'sleep 1000')];
  for (const j of [a, b]) process.kill(j.pid, 'SIGKILL');
  for (const j of [a, b]) await waitFor('the supervisor to die', async () => (alive(j.pid) ? undefined : true), 10_000);
  const states = rows(cli);
  expect(states.find((r) => r.id === a.id)?.state).toBe('orphaned');
  expect(states.find((r) => r.id === b.id)?.state).toBe('orphaned');
  expect(await containerThere(a.container)).toBe(true);
  const killed = cli.run('kill', a.id);
  expect(killed).toMatchObject({ status: 0, stdout: expect.stringContaining(`its container ${a.container} is gone`) });
  expect(await containerThere(a.container)).toBe(false);
  expect(rows(cli, '--all').find((r) => r.id === a.id)?.state).toBe('killed');
  // The other one: its owner is gone, so a sweep (here by hand) removes it.
  const swept = cli.run('cleanup');
  expect(swept.stdout).toMatch(new RegExp(`removed ${b.container} \\(\\w+\\): owner-gone`));
  expect(await containerThere(b.container)).toBe(false);
  expect(rows(cli, '--all').find((r) => r.id === b.id)?.state).toBe('lost');
}, 120_000);
