#!/usr/bin/env node
// Fault test: the engine restarts while 4 sandboxes run commands. Every command must answer
// (no hang) with a named reason; once the engine is back nothing of ours is left; and this
// process keeps working. It stops the machine's engine, so it runs alone, after the other
// suites (.ci/run), never beside them. Needs a local dockerd it may stop (root), a build.
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const { SandboxManager, loadConfig, LABEL } = await import(join(root, 'dist', 'index.js'));
const ENSURE_ENGINE = join(root, 'scripts', 'ensure-engine.sh');

const failures = [];
const check = (ok, what) => {
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${what}`);
  if (!ok) failures.push(what);
};
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const engineAnswers = () => spawnSync('docker', ['info'], { stdio: 'ignore', timeout: 5000 }).status === 0;

if (!engineAnswers()) {
  console.error('No engine answers `docker info`: start one first (bash scripts/ensure-engine.sh).');
  process.exit(2);
}
if (process.env.DOCKER_HOST || spawnSync('pgrep', ['-x', 'dockerd']).status !== 0) {
  console.error('This test restarts a local dockerd: none runs here (or DOCKER_HOST points elsewhere).');
  process.exit(2);
}

const tmp = mkdtempSync(join(tmpdir(), 'gcd-fault-'));
const config = loadConfig({ cwd: tmp, env: {}, overrides: { logs: { dir: join(tmp, 'logs') } } });
const manager = new SandboxManager({ config, sweepOnStart: false });
try {
  const sandboxes = [];
  for (let i = 0; i < 4; i++) sandboxes.push(await manager.start());
  const started = Date.now();
  const answers = sandboxes.map((sb) =>
    sb.exec('echo before; sleep 20; echo after', { timeoutMs: 60_000 }).then(
      (r) => ({ kind: 'result', r }),
      (e) => ({ kind: 'error', e }),
    ),
  );
  await sleep(1500);
  console.log('stopping dockerd');
  execFileSync('pkill', ['-KILL', '-x', 'dockerd']);
  for (let i = 0; i < 50 && spawnSync('pgrep', ['-x', 'dockerd']).status === 0; i++) await sleep(100);
  await sleep(1000);
  console.log('starting dockerd again');
  execFileSync('bash', [ENSURE_ENGINE], { stdio: 'inherit' });

  // Every command answers, before its own timeout, with a named reason.
  const settled = await Promise.race([Promise.all(answers), sleep(90_000).then(() => undefined)]);
  check(settled !== undefined, 'every command answered (no hang)');
  for (const [i, a] of (settled ?? []).entries()) {
    if (a.kind === 'error') {
      check(
        ['ENGINE_UNAVAILABLE', 'CONTAINER_NOT_FOUND', 'ENGINE_ERROR'].includes(a.e.code),
        `command ${i}: ${a.e.code}: ${a.e.message.slice(0, 120)}`,
      );
      const logPath = a.e.data?.logPath;
      check(
        typeof logPath === 'string' && readFileSync(logPath, 'utf8').startsWith('before\n'),
        `command ${i}: the error names its partial log (${logPath})`,
      );
    } else {
      const named = a.r.reason !== undefined && a.r.exitCode !== 0;
      check(named, `command ${i}: exit ${a.r.exitCode}, reason: ${a.r.reason ?? '(none)'}`);
      check(readFileSync(a.r.logPath, 'utf8').startsWith('before\n'), `command ${i}: its partial log is kept`);
    }
  }
  check(Date.now() - started < 90_000, `answered within ${Math.round((Date.now() - started) / 1000)} s`);

  // The next call on those sandboxes is a named error, not a hang or a crash.
  for (const [i, sb] of sandboxes.entries()) {
    const next = await sb.exec('true', { timeoutMs: 10_000 }).then(
      (r) => `exit ${r.exitCode}`,
      (e) => e.code,
    );
    check(['CONTAINER_NOT_FOUND', 'exit 0'].includes(next), `sandbox ${i} afterwards: ${next}`);
  }
  await manager.stopAll();

  // Nothing of this session is left once the engine is back. A container that died with the
  // engine is removed by the engine itself as it restores its state (auto-remove), a moment
  // after it answers again: allow it 15 s, and name the state of any that stays.
  const leftNow = () =>
    execFileSync(
      'docker',
      ['ps', '-a', '--format', '{{.ID}} {{.State}} {{.Status}}', '--filter', `label=${LABEL.session}=${manager.sessionId}`],
      {
        encoding: 'utf8',
      },
    ).trim();
  let left = leftNow();
  for (let i = 0; left !== '' && i < 30; i++) {
    await new Promise((r) => setTimeout(r, 500));
    left = leftNow();
  }
  check(left === '', `no container of the session left${left ? `: ${left}` : ''}`);

  // And the process keeps working.
  const again = await manager.start();
  const r = await again.exec('echo ok');
  check(r.stdout === 'ok\n', 'a new sandbox works after the restart');
  await again.stop();
} finally {
  await manager.stopAll().catch(() => undefined);
  rmSync(tmp, { recursive: true, force: true });
}
console.log(failures.length ? `\nengine restart: ${failures.length} check(s) failed` : '\nengine restart: all checks passed');
process.exit(failures.length ? 1 : 0);
