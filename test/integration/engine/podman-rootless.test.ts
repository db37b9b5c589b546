/**
 * Rootless Podman (`bash scripts/engine/podman.sh start --rootless`: its service run by a user
 * of its own, on a socket of its own). The adapter learns from the engine's info that it is
 * rootless and gives every container `UsernsMode: keep-id`, so that a file a container writes
 * into a host folder is the user's own: checked here with the create body the adapter sends,
 * against a body without it. Where the engine runs on cgroups v1 it cannot enforce a
 * container's limits and every start is refused, before anything is made; on cgroups v2 a
 * start runs as on rootful Podman.
 */
import { execFile } from 'node:child_process';
import { chownSync, statSync } from 'node:fs';
import { join } from 'node:path';
import Docker from 'dockerode';
import { createBody } from '../../../src/engine/docker-containers.js';
import { DockerEngine } from '../../../src/engine/docker-engine.js';
import type { ContainerSpec } from '../../../src/engine/container-engine.js';
import { LABEL } from '../../../src/index.js';
import { fileSession, MINIMAL_IMAGE, newTestSessionId, withManager } from '../../support/engine.js';
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
