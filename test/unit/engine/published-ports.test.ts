/**
 * Ports published on the host (config publishPorts): on the loopback only, in every create
 * body, whatever else the spec says; never asked for on a network that has none, never set
 * by a project's own file, refused on a cluster.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CONFIG_FILE_NAME } from '../../../src/config/config-schema.js';
import { loadConfig } from '../../../src/config/load-config.js';
import { createBody } from '../../../src/engine/docker-containers.js';
import type { ContainerSpec } from '../../../src/engine/container-engine.js';
import { podFor } from '../../../src/engine/kubernetes/pod-spec.js';
import { containerSpec } from '../../../src/sandbox/start-plan.js';
import { removeTempDirs, syncSandboxError, tempDir } from '../helpers.js';

afterEach(removeTempDirs);

const SPEC: ContainerSpec = {
  image: 'genaicode-docker/sandbox-minimal:latest',
  entrypoint: ['sleep'],
  cmd: ['60'],
  env: [],
  labels: {},
  workdir: '/workspace',
  memoryBytes: 256 * 1024 * 1024,
  nanoCpus: 1e9,
  pidsLimit: 64,
  network: 'bridge',
  readOnlyRoot: false,
  tmpfs: [],
  binds: [],
  capAdd: [],
  autoRemove: true,
};

test('each port is bound on 127.0.0.1 only, to a port the engine picks, on Docker and Podman alike', () => {
  for (const kind of ['docker', 'podman'] as const) {
    const body = createBody({ ...SPEC, publishPorts: [3000, 8080] }, kind, undefined);
    expect(body.ExposedPorts).toEqual({ '3000/tcp': {}, '8080/tcp': {} });
    expect(body.HostConfig!.PortBindings).toEqual({
      '3000/tcp': [{ HostIp: '127.0.0.1', HostPort: '' }],
      '8080/tcp': [{ HostIp: '127.0.0.1', HostPort: '' }],
    });
    expect(body.HostConfig).not.toHaveProperty('PublishAllPorts');
  }
  const none = createBody(SPEC, 'docker', undefined);
  expect(none).not.toHaveProperty('ExposedPorts');
  expect(none.HostConfig).not.toHaveProperty('PortBindings');
});

test('a container on the none network publishes nothing; one on bridge gets the configured ports', () => {
  const root = tempDir('gcd-ports-');
  const config = loadConfig({ cwd: root, env: {}, overrides: { publishPorts: [3000], logs: { dir: join(root, 'logs') } } });
  const plan = (network: 'none' | 'bridge') =>
    containerSpec(config, 's1', { network }, { image: 'img', name: 'n', user: undefined, binds: [], project: undefined }).spec;
  expect(plan('none')).not.toHaveProperty('publishPorts');
  expect(plan('bridge').publishPorts).toEqual([3000]);
});

test("a project's own file cannot publish a port; the user's options can", () => {
  const root = join(tempDir('gcd-ports-project-'), 'repo');
  mkdirSync(root, { recursive: true });
  writeFileSync(join(root, CONFIG_FILE_NAME), JSON.stringify({ network: 'none', publishPorts: [22] }));
  const env = { XDG_CONFIG_HOME: tempDir('gcd-xdg-') };
  const e = syncSandboxError(() => loadConfig({ cwd: root, env }));
  expect(e.code).toBe('INVALID_CONFIG');
  expect(e.data.field).toBe('publishPorts');
  expect(e.message).toContain('loopback');
  const bad = syncSandboxError(() => loadConfig({ cwd: tempDir('gcd-ports-bad-'), env, overrides: { publishPorts: [0] } }));
  expect(bad.code).toBe('INVALID_CONFIG');
});

test('a cluster cannot publish on this machine: refused with what to use instead', () => {
  const e = syncSandboxError(() => podFor({ ...SPEC, publishPorts: [3000] }, 'pod-1', 600));
  expect(e.code).toBe('POLICY_VIOLATION');
  expect(e.message).toMatch(/kubectl port-forward/);
});
