/**
 * `run --background`, `ps`, `logs` and `kill` as a person uses them: the built CLI, a real
 * engine (test/support/background-jobs.ts). The supervisor killed with SIGKILL, whose orphan a
 * concurrent sweep could take first, is in cli-background-orphans.test.ts, run alone.
 */
import { readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { LABEL } from '../../../src/index.js';
import { alive, cliWith, containerThere, jobsSuite, records, rows, start, stateDirs } from '../../support/background-jobs.js';
import { docker, dockerOk, MINIMAL_IMAGE, waitFor } from '../../support/engine.js';

jobsSuite();

test('a job started in the background runs on after the CLI returns: ps shows it, logs prints it, kill ends it and its container', async () => {
  const cli = cliWith();
  const job = start(cli, 'echo first line; echo "second \u001b[31m line"; sleep 1000');
  expect(job.id).toMatch(/^j[0-9a-f]{6}$/);
  expect(job.container).toBe(`genaicode-docker-${job.id}`);
  expect(alive(job.pid)).toBe(true);
  expect(await containerThere(job.container)).toBe(true);
  // ps: running, with its image and command; the escape in the command shown by name.
  const table = cli.run('ps');
  expect(table.status).toBe(0);
  expect(table.stdout).toMatch(new RegExp(`^${job.id} +running +\\d+s +1h59m +${MINIMAL_IMAGE} +echo first line;`, 'm'));
  expect(table.stdout).toContain('\\x1b[31m');
  expect(table.stdout).not.toContain('\u001b');
  // logs: what it printed, as it printed it.
  const printed = await waitFor(
    'the job output',
    async () => {
      const r = cli.run('logs', job.id);
      return r.stdout.includes('second') ? r : undefined;
    },
    20_000,
    300,
  );
  expect(printed.status).toBe(0);
  expect(printed.stdout).toBe('first line\nsecond \u001b[31m line\n');
  expect(cli.run('logs', '--tail', '1', job.id).stdout).toBe('second \u001b[31m line\n');
  // The container's name works as the id too.
  expect(cli.run('logs', job.container).stdout).toBe(printed.stdout);
  // kill: the supervisor stops the command and removes the container.
  const killed = cli.run('kill', job.id);
  expect(killed.status).toBe(0);
  expect(killed.stdout).toContain(`its container ${job.container} is gone`);
  expect(await containerThere(job.container)).toBe(false);
  await waitFor('the supervisor to end', async () => (alive(job.pid) ? undefined : true), 10_000);
  expect(rows(cli).find((r) => r.id === job.id)).toBeUndefined();
  expect(rows(cli, '--all').find((r) => r.id === job.id)).toMatchObject({ state: 'killed' });
  // A second kill: already gone, and says so.
  expect(cli.run('kill', job.id)).toMatchObject({ status: 0, stdout: expect.stringContaining('is gone') });
}, 120_000);

test('a job that ends by itself or by its --timeout-ms: its exit code in ps --all, its container gone, logs --follow returns at its end', async () => {
  const cli = cliWith();
  const timed = start(cli, 'echo waiting; sleep 300', '--timeout-ms', '1500');
  const job = start(cli, 'echo one; sleep 2; echo two; exit 7');
  // --follow prints what comes and returns once the job has ended.
  const followed = cli.run('logs', '--follow', job.id);
  expect(followed).toMatchObject({ status: 0, stdout: 'one\ntwo\n' });
  const row = await waitFor(
    'the job to end',
    async () => {
      const r = rows(cli, '--all').find((x) => x.id === job.id);
      return r && r.state !== 'running' ? r : undefined;
    },
    30_000,
    300,
  );
  expect(row.state).toBe('exited 7');
  expect(await containerThere(job.container)).toBe(false);
  await waitFor('the supervisor to end', async () => (alive(job.pid) ? undefined : true), 10_000);
  // Without --timeout-ms a job runs until its container's expiry; with it, it is stopped then.
  expect(cli.run('logs', '--follow', timed.id)).toMatchObject({ status: 0, stdout: 'waiting\n' });
  await waitFor('the timed job to end', async () => (alive(timed.pid) ? undefined : true), 20_000);
  expect(rows(cli, '--all').find((x) => x.id === timed.id)?.state).toBe('timed out');
  expect(await containerThere(timed.container)).toBe(false);
}, 120_000);

test('ps lists a running container of another process of this user; kill removes it', async () => {
  const cli = cliWith();
  const running = cli.spawn('run', '--', 'sleep 300');
  const exited = new Promise<number | null>((resolve) => running.on('exit', (code) => resolve(code)));
  try {
    const row = await waitFor(
      'the run container in ps',
      async () => rows(cli).find((r) => r.command === `(a container of process ${running.pid})`),
      30_000,
      300,
    );
    expect(row).toMatchObject({ state: 'running', image: MINIMAL_IMAGE });
    expect(await containerThere(row.id)).toBe(true);
    const killed = cli.run('kill', row.id);
    expect(killed).toMatchObject({ status: 0, stdout: expect.stringContaining(`its container ${row.id} is gone`) });
    expect(await containerThere(row.id)).toBe(false);
    // The `run` whose container it was ends: its command was killed with the container (137).
    expect(await exited).toBe(137);
  } finally {
    running.kill('SIGKILL');
  }
}, 120_000);

test('ids that are not jobs of this user get a sentence and exit 1; a tampered record is not followed', async () => {
  const cli = cliWith();
  for (const id of ['jffffff', 'nothing-here', '../x', '/etc/passwd', 'j123456/../../x', '']) {
    for (const verb of ['kill', 'logs']) {
      const r = cli.run(verb, id);
      expect(r.status).toBe(1);
      expect(r.stderr).toMatch(/is not a background job or container of yours: `genaicode-docker ps --all` lists their ids\./);
    }
  }
  // A managed container whose owner is not a process of this user (another host here): not ours to kill.
  const foreign = `gcd-bg-foreign-${Date.now()}`;
  await dockerOk([
    'run',
    '-d',
    '--name',
    foreign,
    '--label',
    `${LABEL.managed}=true`,
    '--label',
    `${LABEL.owner}=another-host:4242`,
    '--label',
    `${LABEL.expiresAt}=${new Date(Date.now() + 120_000).toISOString()}`,
    MINIMAL_IMAGE,
    'sleep',
    '120',
  ]);
  try {
    const refused = cli.run('kill', foreign);
    expect(refused.status).toBe(1);
    expect(refused.stderr).toContain('is not a background job or container of yours');
    expect(await containerThere(foreign)).toBe(true);
    expect(rows(cli).some((r) => r.id === foreign)).toBe(false);

    // Tampered records of an ended job: a log outside the log folder, a link inside it, another container.
    const job = start(cli, 'echo mine');
    expect(cli.run('logs', '--follow', job.id).stdout).toBe('mine\n');
    const recordPath = join(cli.logsDir, 'jobs', `${job.id}.json`);
    const record = JSON.parse(readFileSync(recordPath, 'utf8')) as Record<string, unknown>;
    const link = join(cli.logsDir, 'looks-like-a.log');
    symlinkSync('/etc/passwd', link);
    for (const logPath of ['/etc/passwd', link, join(cli.logsDir, '..', '..', '..', 'x.log'), 'relative.log']) {
      writeFileSync(recordPath, JSON.stringify({ ...record, logPath }));
      const r = cli.run('logs', job.id);
      expect(r.status).toBe(1);
      expect(r.stderr).toMatch(/does not name a log file of yours inside the log folder/);
      expect(r.stdout).toBe('');
    }
    const foreignId = (await dockerOk(['inspect', '--format', '{{.Id}}', foreign])).trim();
    writeFileSync(recordPath, JSON.stringify({ ...record, state: 'running', container: { id: foreignId, name: foreign } }));
    const notTheJobs = cli.run('kill', job.id);
    expect(notTheJobs.status).toBe(1);
    expect(notTheJobs.stderr).toContain('is not the one job');
    expect(await containerThere(foreign)).toBe(true);
    // A record that is not one (bad JSON, wrong shape): as good as absent.
    for (const text of ['{not json', JSON.stringify({ ...record, pid: 'x' }), JSON.stringify({ ...record, id: 'jffffff' })]) {
      writeFileSync(recordPath, text);
      expect(cli.run('logs', job.id)).toMatchObject({ status: 1, stderr: expect.stringContaining('is not a background job') });
    }
  } finally {
    await docker(['rm', '-f', foreign]);
  }
}, 120_000);

test('Ctrl-C while a job starts cancels it: exit 130, its supervisor ended, no container', async () => {
  const cli = cliWith();
  const state = stateDirs[stateDirs.length - 1]!;
  const parent = cli.spawn('run', '--background', '--', 'sleep 1000');
  let stderr = '';
  parent.stderr?.on('data', (b: Buffer) => (stderr += b.toString()));
  // 'close', not 'exit': the last of stderr may arrive after the process is gone.
  const exited = new Promise<number | null>((resolve) => parent.on('close', (code) => resolve(code)));
  // The supervisor has the job (its record says starting) and is starting the sandbox.
  const job = await waitFor('the job record', async () => records(state)[0], 20_000, 20);
  parent.kill('SIGINT');
  expect(await exited).toBe(130);
  expect(stderr).toContain('canceled: the background job was stopped and its container removed');
  expect(alive(job.pid)).toBe(false);
  const ended = records(state)[0]!;
  expect(['failed', 'ended']).toContain(ended.state);
  expect(await containerThere(`genaicode-docker-${job.id}`)).toBe(false);
}, 120_000);

test('a background job that cannot start fails in the parent with the error, leaving no container and no supervisor', async () => {
  const cli = cliWith();
  const r = cli.run('run', '--background', '--image', 'genaicode-docker/does-not-exist:1', '--', 'sleep 1000');
  expect(r.status).toBe(125);
  expect(r.stderr).toContain('IMAGE_NOT_FOUND');
  expect(r.stdout).toBe('');
  const json = cli.run('run', '--background', '--json', '--image', 'nope/never:1', '--', 'true');
  expect(json.status).toBe(125);
  expect(JSON.parse(json.stdout)).toMatchObject({ code: 'IMAGE_NOT_ALLOWED' });
  const jobs = records(stateDirs[stateDirs.length - 1]!);
  expect(jobs).toHaveLength(2);
  for (const j of jobs) {
    expect(j.state).toBe('failed');
    await waitFor('the supervisor to end', async () => (alive(j.pid) ? undefined : true), 10_000);
    expect(await containerThere(`genaicode-docker-${j.id}`)).toBe(false);
  }
}, 120_000);
