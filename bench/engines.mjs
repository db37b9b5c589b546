#!/usr/bin/env node
// Other engines, side by side and interleaved in one run, each against its own CLI:
//   - the remote engine: a second dockerd on loopback over TLS (scripts/engine/second-engine.sh),
//     reached through DOCKER_HOST=tcp://..., DOCKER_TLS_VERIFY and DOCKER_CERT_PATH, vs the
//     `docker` CLI pointed at it the same way;
//   - Podman's Docker API (scripts/engine/podman.sh) vs the `podman` CLI;
//   - an ssh:// engine: an OpenSSH server on loopback (started here, its own host key and a
//     client key made here) in front of the main engine's socket, reached through our own ssh
//     child (DOCKER_HOST=ssh://root@127.0.0.1:PORT, engine.ssh.configFile) vs the `docker`
//     CLI with the same DOCKER_HOST (it runs `ssh ... docker system dial-stdio` per command; an
//     `ssh` on its PATH adds -F with the same config file). The forward's start is timed apart.
// For each: start to ready (`manager.start()` until it resolves vs `run -d --network none IMG
// sleep 3600` until it returns; removal not timed) and a command's round trip in a warm
// container (`sandbox.exec('true')` vs `exec C true`). Targets: each median ratio <= 1.0x.
// Both engines are started by the project's scripts (idempotent; they stay up afterwards).
//
//   --quick        fewer rounds (a smoke run)
//   --only=tls     or --only=podman, --only=ssh: one engine
import { execFile, execFileSync, spawn } from 'node:child_process';
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const { DockerEngine, SandboxManager, loadConfig } = await import('../dist/index.js');
const { fmtMs, fmtRatio, interleave, loadAvg, median, p90, rmQuiet, tempDir, MINIMAL_IMAGE } = await import('./lib.mjs');

const QUICK = process.argv.includes('--quick');
const ROUNDS = QUICK ? 5 : 15;
const WARMUP = 2;
const ONLY = process.argv.find((a) => a.startsWith('--only='))?.slice('--only='.length);
const ROOT = join(fileURLToPath(import.meta.url), '..', '..');

function run(file, args, env = process.env) {
  return new Promise((resolve) => {
    execFile(file, args, { env, timeout: 300_000, maxBuffer: 16 * 1024 * 1024, encoding: 'utf8' }, (error, stdout, stderr) =>
      resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout, stderr }),
    );
  });
}
async function ok(file, args, env) {
  const r = await run(file, args, env);
  if (r.code !== 0) throw new Error(`${file} ${args.join(' ')} failed (${r.code}): ${r.stderr.trim()}`);
  return r.stdout;
}

/** Starts an engine with the project's script; returns the environment it printed. */
async function startEngine(script) {
  const out = await ok('bash', [join(ROOT, 'scripts', 'engine', script), 'start']);
  const env = {};
  for (const m of out.matchAll(/^export (\w+)=(.*)$/gm)) env[m[1]] = m[2];
  return env;
}

/**
 * An sshd on loopback in front of the main engine's socket, for the ssh:// engine: returns the
 * environment for both clients, our settings, and a stop.
 */
async function startSshServer() {
  const dir = tempDir('gcd-bench-sshd-');
  const port = 20000 + Math.floor(Math.random() * 20000);
  for (const k of ['host_key', 'client_key']) execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', join(dir, k)]);
  writeFileSync(join(dir, 'authorized_keys'), readFileSync(join(dir, 'client_key.pub')));
  writeFileSync(join(dir, 'known_hosts'), `[127.0.0.1]:${port} ${readFileSync(join(dir, 'host_key.pub'), 'utf8')}`);
  const sshdConfig = [`Port ${port}`, 'ListenAddress 127.0.0.1', `HostKey ${join(dir, 'host_key')}`, `AuthorizedKeysFile ${join(dir, 'authorized_keys')}`,
    `PidFile ${join(dir, 'sshd.pid')}`, 'PermitRootLogin prohibit-password', 'PasswordAuthentication no', 'KbdInteractiveAuthentication no',
    'UsePAM no', 'StrictModes no', 'AllowStreamLocalForwarding yes', ''].join('\n'); // prettier-ignore
  writeFileSync(join(dir, 'sshd_config'), sshdConfig);
  const clientConfig = join(dir, 'ssh_config');
  writeFileSync(
    clientConfig,
    `Host *\n  IdentityFile ${join(dir, 'client_key')}\n  UserKnownHostsFile ${join(dir, 'known_hosts')}\n  StrictHostKeyChecking yes\n`,
  );
  // The docker CLI runs `ssh` from its PATH: this one adds the same config file.
  const shim = join(dir, 'bin');
  mkdirSync(shim);
  writeFileSync(join(shim, 'ssh'), `#!/bin/sh\nexec /usr/bin/ssh -F ${clientConfig} "$@"\n`);
  chmodSync(join(shim, 'ssh'), 0o755);
  mkdirSync('/run/sshd', { recursive: true });
  const sshd = spawn('/usr/sbin/sshd', ['-D', '-e', '-f', join(dir, 'sshd_config')], { stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  sshd.stderr.on('data', (d) => (log += d));
  for (let i = 0; i < 200 && !/Server listening/.test(log); i++) await new Promise((r) => setTimeout(r, 50));
  if (!/Server listening/.test(log)) throw new Error(`sshd did not start: ${log}`);
  const host = `ssh://root@127.0.0.1:${port}`;
  return {
    env: { DOCKER_HOST: host },
    settings: { host, ssh: { configFile: clientConfig } },
    cliEnv: { ...process.env, DOCKER_HOST: host, PATH: `${shim}:${process.env.PATH}` },
    stop: () => sshd.kill('SIGTERM'),
  };
}

const engines = [
  {
    name: 'remote TLS engine',
    key: 'tls',
    script: 'second-engine.sh',
    cli: (env) => ({ file: 'docker', env: { ...process.env, ...env } }),
  },
  {
    name: 'Podman',
    key: 'podman',
    script: 'podman.sh',
    // The podman CLI reads its settings from the same containers.conf as the service.
    cli: () => ({ file: 'podman', env: { ...process.env, CONTAINERS_CONF: '/var/lib/genaicode-docker-podman/containers.conf' } }),
  },
  {
    name: 'ssh:// engine (OpenSSH on loopback)',
    key: 'ssh',
    start: startSshServer,
    cli: (_env, server) => ({ file: 'docker', env: server.cliEnv }),
  },
].filter((e) => !ONLY || e.key === ONLY);

const tmp = tempDir('gcd-engines-bench-');
const results = [];
console.log(`load average at start: ${loadAvg()}`);
try {
  for (const e of engines) {
    const server = e.start ? await e.start() : undefined;
    const env = server ? server.env : await startEngine(e.script);
    const cli = e.cli(env, server);
    const engine = new DockerEngine(server?.settings ?? {}, env);
    if (server) {
      // The forward's own start, once per process: ssh's log-in and the first _ping.
      const t0 = performance.now();
      await engine.info();
      console.log(`\nssh:// forward up and the first info answered in ${fmtMs(performance.now() - t0)} (once per process)`);
    }
    const config = loadConfig({ cwd: tmp, env: {}, overrides: { logs: { dir: join(tmp, 'logs') }, images: { default: MINIMAL_IMAGE } } });
    const manager = new SandboxManager({ config, engine, sweepOnStart: false });
    const info = await engine.info();
    console.log(`\n## ${e.name}: ${info.kind} ${info.version} (API ${info.apiVersion}) at ${info.endpoint}, vs the ${cli.file} CLI`);
    try {
      // Start to ready.
      const made = [];
      const start = await interleave(
        {
          ours: async () => made.push({ sandbox: await manager.start() }),
          cli: async () =>
            made.push({ id: (await ok(cli.file, ['run', '-d', '--network', 'none', MINIMAL_IMAGE, 'sleep', '3600'], cli.env)).trim() }),
        },
        {
          rounds: ROUNDS,
          warmup: WARMUP,
          between: async () => {
            for (const m of made.splice(0)) {
              if (m.sandbox) await m.sandbox.stop();
              else await run(cli.file, ['rm', '-f', m.id], cli.env);
            }
          },
        },
      );
      // A command's round trip in a warm container of each.
      const sandbox = await manager.start();
      const warm = (await ok(cli.file, ['run', '-d', '--network', 'none', MINIMAL_IMAGE, 'sleep', '3600'], cli.env)).trim();
      let exec;
      try {
        exec = await interleave(
          {
            ours: async () => {
              const r = await sandbox.exec('true');
              if (r.exitCode !== 0) throw new Error(`exec true: exit ${r.exitCode}`);
            },
            cli: () => ok(cli.file, ['exec', warm, 'true'], cli.env),
          },
          { rounds: ROUNDS * 2, warmup: WARMUP },
        );
      } finally {
        await sandbox.stop();
        await run(cli.file, ['rm', '-f', warm], cli.env);
      }
      for (const [what, r] of [
        ['start to ready', start],
        ["exec('true')", exec],
      ]) {
        const ratio = median(r.times.ours) / median(r.times.cli);
        console.log(
          `${what.padEnd(15)} ours ${fmtMs(median(r.times.ours))} (p90 ${fmtMs(p90(r.times.ours))})  ${cli.file} CLI ${fmtMs(median(r.times.cli))} (p90 ${fmtMs(p90(r.times.cli))})  ratio ${fmtRatio(ratio)}  ${ratio <= 1 ? 'PASS' : 'FAIL'} (<= 1.0x)`,
        );
        results.push({ engine: e.name, what, ours: median(r.times.ours), cli: median(r.times.cli), ratio });
      }
    } finally {
      await manager[Symbol.asyncDispose]();
      engine.sshTunnel?.end();
      server?.stop();
    }
  }
} finally {
  rmQuiet(tmp);
}
console.log(`\nload average at end: ${loadAvg()}\n`);
console.log('| engine | what | ours (median) | CLI (median) | ratio |');
console.log('|---|---|---|---|---|');
for (const r of results) console.log(`| ${r.engine} | ${r.what} | ${fmtMs(r.ours)} | ${fmtMs(r.cli)} | ${fmtRatio(r.ratio)} |`);
