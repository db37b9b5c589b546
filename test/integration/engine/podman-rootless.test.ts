/**
 * Rootless Podman (`bash scripts/engine/podman.sh start --rootless`: its service run by a user
 * of its own, on a socket of its own). The adapter learns from the engine's info that it is
 * rootless and gives every container `UsernsMode: keep-id`, so that a file a container writes
 * into a host folder is the user's own: checked here with the create body the adapter sends,
 * against a body without it. Where the engine runs on cgroups v1 it cannot enforce a
 * container's limits and every start is refused, before anything is made; on cgroups v2 a
 * start runs as on rootful Podman.
 */
import { execFile, execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Docker from 'dockerode';
import { createBody } from '../../../src/engine/docker-containers.js';
import { DockerEngine } from '../../../src/engine/docker-engine.js';
import type { ContainerSpec } from '../../../src/engine/container-engine.js';
import { LABEL } from '../../../src/index.js';
import { fileSession, MINIMAL_IMAGE, newTestSessionId, withManager } from '../../support/engine.js';
import { CLI, ROOT } from '../../support/built-package.js';
import { sandboxError } from '../../support/sandbox-error.js';
import { removeTempDirs, tempDir } from '../../support/temp-dirs.js';

const USER = process.env.GENAICODE_PODMAN_USER || 'gcd-rootless';
let socketPath = '';
let uid = 0;
let gid = 0;

function run(cmd: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) =>
    execFile(cmd, args, { timeout: 120_000 }, (error, stdout, stderr) =>
      error ? reject(new Error(`${cmd} ${args.join(' ')}: ${stderr.trim() || error.message}`)) : resolve(stdout),
    ),
  );
}

fileSession('podman-rootless');

beforeAll(async () => {
  let env: string;
  try {
    env = await run('bash', ['scripts/engine/podman.sh', 'env', '--rootless']);
  } catch (e) {
    throw new Error(
      `Rootless Podman's service is not running: start it with \`bash scripts/engine/podman.sh start --rootless\` (root). (${String(e)})`,
    );
  }
  socketPath = /unix:\/\/(\S+)/.exec(env)?.[1] ?? '';
  uid = Number((await run('id', ['-u', USER])).trim());
  gid = Number((await run('id', ['-g', USER])).trim());
});

afterAll(() => removeTempDirs());

test('the engine says it is rootless Podman', async () => {
  const info = await new DockerEngine({ socketPath }).info();
  expect(info).toMatchObject({ kind: 'podman', rootless: true });
  expect(await new DockerEngine().info()).toMatchObject({ rootless: false });
});

/** Runs `touch` as the engine's user in a container whose /out is a host folder of that user's, with or without keep-id. */
async function ownerOfWrite(userns: string | undefined): Promise<{ exit: number; owner?: number }> {
  const out = tempDir('gcd-keep-id-');
  chownSync(out, uid, gid);
  const spec: ContainerSpec = {
    image: MINIMAL_IMAGE,
    entrypoint: ['sh', '-c'],
    cmd: ['touch /out/made-inside'],
    env: [],
    labels: { [LABEL.managed]: 'true' },
    workdir: '/',
    user: `${uid}:${gid}`,
    memoryBytes: 128 << 20,
    nanoCpus: 1e9,
    pidsLimit: 64,
    network: 'none',
    readOnlyRoot: false,
    tmpfs: [],
    binds: [{ hostPath: out, containerPath: '/out', readOnly: false }],
    capAdd: [],
    autoRemove: false,
  };
  const docker = new Docker({ socketPath });
  const container = await docker.createContainer(createBody(spec, 'podman', undefined, userns));
  try {
    await container.start();
    const { StatusCode } = (await container.wait()) as { StatusCode: number };
    let owner: number | undefined;
    try {
      owner = statSync(join(out, 'made-inside')).uid;
    } catch {
      owner = undefined;
    }
    return { exit: StatusCode, owner };
  } finally {
    await container.remove({ force: true });
  }
}

test("with keep-id (the adapter's body on rootless Podman) the container writes the user's folder as the user; without it, not", async () => {
  expect(await ownerOfWrite('keep-id')).toEqual({ exit: 0, owner: uid });
  // The same uid in a default user namespace is a subordinate id on the host: the write is refused, or not the user's.
  const without = await ownerOfWrite(undefined);
  expect(without.owner).not.toBe(uid);
});

test('a start: refused before anything is made on cgroups v1 (no limits there), run with keep-id on cgroups v2', async () => {
  const engine = new DockerEngine({ socketPath });
  const info = await engine.info();
  const sessionId = newTestSessionId();
  await withManager(
    async (manager) => {
      if (info.cgroupVersion === '1') {
        const e = await sandboxError(() => manager.start({}));
        expect(e.code).toBe('POLICY_VIOLATION');
        expect(e.message).toMatch(/runs rootless on cgroups v1, where it cannot enforce a container's memory, CPU and process limits/);
        expect(e.data).toMatchObject({ rule: 'resourceLimits' });
      } else {
        const sandbox = await manager.start({});
        const r = await sandbox.exec('cat /proc/self/uid_map | wc -l', { timeoutMs: 20_000 });
        expect(r.exitCode).toBe(0);
        await sandbox.stop();
      }
    },
    { engine, sessionId },
  );
  expect(await engine.listContainers({ [LABEL.session]: sessionId })).toEqual([]);
});

test("with engine.rootlessWithoutLimits a start runs there, with keep-id, whatever the cgroups, as the image's user (root)", async () => {
  const engine = new DockerEngine({ socketPath, rootlessWithoutLimits: true });
  const sessionId = newTestSessionId();
  await withManager(
    async (manager) => {
      const sandbox = await manager.start({});
      const r = await sandbox.exec('id -u', { timeoutMs: 20_000 });
      // keep-id alone would run the engine's user; the image names none, so root (of the user namespace).
      expect(r).toMatchObject({ exitCode: 0, stdout: '0\n' });
      await sandbox.stop();
    },
    { engine, sessionId },
  );
  expect(await engine.listContainers({ [LABEL.session]: sessionId })).toEqual([]);
});

// ---------------------------------------------------------------------------------------
// A writable project on rootless Podman, as its user drives it: the built CLI run as the
// engine's user, in a project of theirs.

/** The built package where the engine's user can read it: here, or a linked copy (a clone under a private home). */
let cli = CLI;
function readableCli(): string {
  const as = ['--reuid', String(uid), '--regid', String(gid), '--init-groups', '--reset-env'];
  if (spawnSync('setpriv', [...as, 'test', '-r', CLI]).status === 0) return CLI;
  const copy = tempDir('gcd-rootless-pkg-');
  chmodSync(copy, 0o755);
  for (const part of ['dist', 'node_modules', 'package.json']) {
    const linked = spawnSync('cp', ['-al', join(ROOT, part), copy]);
    if (linked.status !== 0) execFileSync('cp', ['-r', join(ROOT, part), copy]);
  }
  return join(copy, 'dist', 'cli', 'main.js');
}

/** A folder of the engine's user. */
function usersDir(prefix: string): string {
  const d = tempDir(prefix);
  chownSync(d, uid, gid);
  return d;
}

/** The CLI as the engine's user, in `cwd`, on the rootless engine (limits accepted where cgroups v1 has none). */
async function cliAsUser(
  cwd: string,
  args: string[],
  more: string[] = [],
): Promise<{ status: number | null; stdout: string; stderr: string; state: string }> {
  const v1 = (await new DockerEngine({ socketPath }).info()).cgroupVersion === '1';
  const state = usersDir('gcd-rootless-state-');
  const env = [
    `HOME=${usersDir('gcd-rootless-home-')}`,
    `PATH=${process.env.PATH}`,
    `DOCKER_HOST=unix://${socketPath}`,
    `XDG_STATE_HOME=${state}`,
    `XDG_CONFIG_HOME=${usersDir('gcd-rootless-config-')}`,
    'GENAICODE_DOCKER_CONFIRM_START=false',
    'GENAICODE_DOCKER_PROJECT_MOUNT=rw',
    ...(v1 ? ['GENAICODE_DOCKER_ROOTLESS_WITHOUT_LIMITS=1'] : []),
    ...more,
  ];
  const r = spawnSync(
    'setpriv',
    ['--reuid', String(uid), '--regid', String(gid), '--init-groups', '--reset-env', 'env', ...env, process.execPath, cli, ...args],
    { cwd, encoding: 'utf8', timeout: 120_000 },
  );
  return { status: r.status, stdout: r.stdout, stderr: r.stderr, state };
}

/**
 * No overlay folder is left in the user's state folder: the user could remove its upper folder
 * (Podman had not given it to the image's root, a subordinate id), as the stop does.
 */
function noOverlayFolderLeft(state: string): void {
  const overlays = join(state, 'genaicode-docker', 'logs', 'overlays');
  expect(readdirSync(overlays).filter((name) => name !== 'spent')).toEqual([]);
}

/** A project of the engine's user: a.py, sub/keep.txt. */
function usersProject(): string {
  const project = usersDir('gcd-rootless-project-');
  writeFileSync(join(project, 'a.py'), 'print(1)\n');
  mkdirSync(join(project, 'sub'));
  writeFileSync(join(project, 'sub', 'keep.txt'), 'x\n');
  for (const p of ['a.py', 'sub', 'sub/keep.txt']) chownSync(join(project, p), uid, gid);
  return project;
}

/** Nothing of ours is left on the rootless engine: no container (the priming one included), no overlay volume. */
async function nothingLeft(): Promise<void> {
  const docker = new Docker({ socketPath });
  expect(await docker.listContainers({ all: true, filters: JSON.stringify({ label: [`${LABEL.managed}=true`] }) })).toEqual([]);
  const { Volumes } = await docker.listVolumes();
  expect((Volumes ?? []).filter((v) => v.Labels?.[LABEL.managed] === 'true').map((v) => v.Name)).toEqual([]);
}

const WRITES = 'echo new > new.txt && echo more >> a.py && rm sub/keep.txt && mkdir d && echo y > d/y && id -u';

test("'rw': what the container writes reaches the project, every file the user's; a new file in the project's root too", async () => {
  cli = readableCli();
  const project = usersProject();
  const r = await cliAsUser(project, ['run', '--project', 'rw', '--', 'sh', '-c', WRITES]);
  expect({ status: r.status, stderr: r.stderr }).toEqual({ status: 0, stderr: expect.any(String) });
  expect(r.stdout).toContain(`${uid}\n`);
  expect(r.stdout + r.stderr).toMatch(/project: 3 created, 1 changed, 1 deleted/);
  expect(readFileSync(join(project, 'new.txt'), 'utf8')).toBe('new\n');
  expect(readFileSync(join(project, 'a.py'), 'utf8')).toBe('print(1)\nmore\n');
  expect(readFileSync(join(project, 'd', 'y'), 'utf8')).toBe('y\n');
  expect(existsSync(join(project, 'sub', 'keep.txt'))).toBe(false);
  for (const p of ['new.txt', 'a.py', 'd', 'd/y']) expect([p, statSync(join(project, p)).uid]).toEqual([p, uid]);
  noOverlayFolderLeft(r.state);
  await nothingLeft();
}, 180_000);

test("'scratch': the container writes the project's root, and nothing reaches the project", async () => {
  cli = readableCli();
  const project = usersProject();
  const r = await cliAsUser(project, ['run', '--project', 'scratch', '--', 'sh', '-c', `${WRITES} && cat a.py`]);
  expect({ status: r.status, stderr: r.stderr }).toEqual({ status: 0, stderr: expect.any(String) });
  expect(r.stdout).toContain('print(1)\nmore\n');
  expect(readdirSync(project).sort()).toEqual(['a.py', 'sub']);
  expect(readFileSync(join(project, 'a.py'), 'utf8')).toBe('print(1)\n');
  expect(existsSync(join(project, 'sub', 'keep.txt'))).toBe(true);
  noOverlayFolderLeft(r.state);
  await nothingLeft();
}, 180_000);

test("'rw' from a process that is not the engine's user is refused before anything is made, saying why", async () => {
  const engine = new DockerEngine({ socketPath, rootlessWithoutLimits: true });
  await withManager(
    async (manager) => {
      const e = await sandboxError(() => manager.start({ project: 'rw' }));
      expect(e.code).toBe('POLICY_VIOLATION');
      expect(e.message).toContain(`the engine is a rootless Podman run by uid ${uid}, and this process runs as uid ${process.getuid?.()}`);
      expect(e.data).toMatchObject({ rule: 'projectMount' });
    },
    { engine, overrides: { project: { mount: 'rw' } } },
  );
  await nothingLeft();
});

test("'rw' with a configured user other than the engine's: refused after Podman's first mount, nothing reaches the project, nothing is left", async () => {
  cli = readableCli();
  const project = usersProject();
  const r = await cliAsUser(
    project,
    ['run', '--project', 'rw', '--', 'sh', '-c', WRITES],
    [`GENAICODE_DOCKER_USER=${uid + 500}:${gid + 500}`],
  );
  expect(r.status).not.toBe(0);
  expect(r.stderr).toMatch(
    /POLICY_VIOLATION: The project overlay's upper folder .* belongs to uid \d+ after Podman's first mount, not to this process's uid \d+/,
  );
  expect(readdirSync(project).sort()).toEqual(['a.py', 'sub']);
  await nothingLeft();
}, 180_000);

test('the file size cap holds on rootless Podman, whose compat API drops the ulimits of a create: in the kept shell, an exec of its own, a detached child', async () => {
  const engine = new DockerEngine({ socketPath, rootlessWithoutLimits: true });
  const cap = 64 * 1024 * 1024;
  const size = (file: string) => `wc -c < ${file}`;
  await withManager(
    async (manager) => {
      const sandbox = await manager.start({});
      try {
        const limits = await sandbox.exec('grep "Max file size" /proc/self/limits', { timeoutMs: 20_000 });
        expect(limits.stdout).toMatch(new RegExp(`^Max file size\\s+${cap}\\s+${cap}\\s`));
        // One file written at once, in the kept shell: stopped at the cap (SIGXFSZ), never past it.
        const one = await sandbox.exec(`head -c ${2 * cap} /dev/zero > /tmp/one; ${size('/tmp/one')}`, { timeoutMs: 60_000 });
        expect(Number(one.stdout.trim())).toBeLessThanOrEqual(cap);
        // The same in an exec of its own (a command that brings its environment).
        const own = await sandbox.exec(`head -c ${2 * cap} /dev/zero > /tmp/own; ${size('/tmp/own')}`, {
          timeoutMs: 60_000,
          env: { OWN_EXEC: '1' },
        });
        expect(Number(own.stdout.trim())).toBeLessThanOrEqual(cap);
        // A child of its own session, appending past the cap after its command ended, and trying to raise the limit first.
        await sandbox.exec(
          `setsid sh -c 'ulimit -f unlimited; for i in $(seq 1 ${(2 * cap) / 1048576}); do head -c 1048576 /dev/zero >> /tmp/grown || exit; done; touch /tmp/grown.done' >/dev/null 2>&1 &`,
          { timeoutMs: 20_000 },
        );
        const grown = await sandbox.exec(`sleep 3; ${size('/tmp/grown')}`, { timeoutMs: 60_000 });
        expect(Number(grown.stdout.trim())).toBeLessThanOrEqual(cap);
      } finally {
        await sandbox.stop();
      }
    },
    { engine, overrides: { limits: { disk: '64m' } } },
  );
  await nothingLeft();
}, 180_000);

// Podman makes every added capability an ambient one for a container's user who is not root:
// the engine's own user (keep-id) would hold CHOWN, DAC_OVERRIDE, FOWNER, SETUID... Each line
// tries one of them; none may work, and nothing may be left that the user cannot remove.
const CAPABILITY_ATTACKS = [
  'grep "^CapEff" /proc/self/status',
  'grep "^CapAmb" /proc/self/status',
  'mkdir given && echo x > given/f && chown 0:0 given/f given && echo "X-$((6*7))-chown"',
  'chmod 700 given 2>/dev/null; chown 1:1 given 2>/dev/null && echo "X-$((6*7))-chown-other"',
  'chmod 666 /etc/passwd && echo "X-$((6*7))-fowner"',
  'echo x >> /etc/passwd && echo "X-$((6*7))-dac-override"',
];

for (const mount of ['rw', 'scratch'] as const)
  test(`'${mount}': the container's user has no capabilities, so it cannot give what it writes to another id, and everything is removed`, async () => {
    cli = readableCli();
    const project = usersProject();
    const script = CAPABILITY_ATTACKS.map((line) => `{ ${line}; } 2>/dev/null`).join('; ');
    const r = await cliAsUser(project, ['run', '--project', mount, '--', 'sh', '-c', `${script}; true`]);
    expect({ status: r.status, stderr: r.stderr }).toEqual({ status: 0, stderr: expect.any(String) });
    expect(r.stdout).toMatch(/^CapEff:\s+0+$/m);
    expect(r.stdout).toMatch(/^CapAmb:\s+0+$/m);
    expect(r.stdout).not.toMatch(/X-42-/);
    noOverlayFolderLeft(r.state);
    // Nor a folder set aside because it could not be removed.
    const spent = join(r.state, 'genaicode-docker', 'logs', 'overlays', 'spent');
    expect(existsSync(spent) ? readdirSync(spent) : []).toEqual([]);
    if (mount === 'rw') for (const p of readdirSync(project)) expect([p, statSync(join(project, p)).uid]).toEqual([p, uid]);
    await nothingLeft();
  }, 180_000);

for (const mount of ['rw', 'scratch'] as const)
  test(`'${mount}': folders the container closes to its own user (chmod 000) do not keep the overlay folder from being removed`, async () => {
    cli = readableCli();
    const project = usersProject();
    const r = await cliAsUser(project, [
      'run',
      '--project',
      mount,
      '--',
      'sh',
      '-c',
      'mkdir -p locked/in deep/a/b && echo x > locked/in/f && echo y > deep/a/b/g && chmod 000 locked/in locked deep/a/b && chmod 100 deep/a && chmod 300 deep',
    ]);
    expect(r.status).toBe(0);
    noOverlayFolderLeft(r.state);
    await nothingLeft();
  }, 180_000);
