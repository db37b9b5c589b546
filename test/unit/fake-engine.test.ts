/**
 * The fake engine answers like the port promises (a missing container is false/undefined,
 * failures are SandboxErrors), so the tests built on it test our logic, not the fake's.
 */
import { SandboxError } from '../../src/errors.js';
import { KILL_TREE_SCRIPT, READ_COUNTERS_SCRIPT, wrapCommand } from '../../src/commands/wrapper-protocol.js';
import type { ContainerSpec, StreamId } from '../../src/engine/container-engine.js';
import { commandOf, FakeEngine, out, pidMarker } from '../support/fake-engine.js';
import { sandboxError } from './helpers.js';

function spec(extra: Partial<ContainerSpec> = {}): ContainerSpec {
  return {
    image: 'alpine:3.20',
    name: 'c1',
    entrypoint: ['sleep'],
    cmd: ['60'],
    env: [],
    labels: { a: '1', b: '2' },
    workdir: '/w',
    memoryBytes: 1,
    nanoCpus: 1,
    pidsLimit: 8,
    network: 'none',
    readOnlyRoot: false,
    tmpfs: [],
    binds: [],
    capAdd: [],
    autoRemove: false,
    ...extra,
  };
}

function collect() {
  const got: Array<[StreamId, string]> = [];
  return { got, onOutput: (s: StreamId, b: Buffer) => got.push([s, b.toString('latin1')]) };
}

describe('FakeEngine', () => {
  test('containers: create, start, inspect by id/name/prefix, list by labels, stop, remove', async () => {
    const engine = new FakeEngine({ images: ['alpine:3.20'] });
    const id = await engine.createContainer(spec());
    expect((await engine.inspectContainer(id))?.running).toBe(false);
    await engine.startContainer(id);
    expect(await engine.inspectContainer('c1')).toMatchObject({
      id,
      name: 'c1',
      running: true,
      exitCode: null,
      labels: { a: '1', b: '2' },
    });
    expect((await engine.inspectContainer(id.slice(0, 8)))?.id).toBe(id);
    expect((await engine.listContainers({ a: '1' })).map((c) => c.id)).toEqual([id]);
    expect(await engine.listContainers({ a: '1', b: '3' })).toEqual([]);
    expect(await engine.stopContainer(id, 1)).toBe(true);
    expect(await engine.removeContainer(id, false)).toBe(true);
    expect(await engine.stopContainer(id, 1)).toBe(false);
    expect(await engine.removeContainer(id, true)).toBe(false);
    expect(await engine.inspectContainer(id)).toBeUndefined();
    expect(engine.methods()).toEqual([
      'createContainer',
      'inspectContainer',
      'startContainer',
      'inspectContainer',
      'inspectContainer',
      'listContainers',
      'listContainers',
      'stopContainer',
      'removeContainer',
      'stopContainer',
      'removeContainer',
      'inspectContainer',
    ]);
  });

  test('auto-remove deletes a container when it stops; a missing image or a taken name fails create', async () => {
    const engine = new FakeEngine({ images: ['alpine:3.20'] });
    const id = await engine.createContainer(spec({ autoRemove: true }));
    await engine.startContainer(id);
    await engine.stopContainer(id, 1);
    expect(engine.containers.has(id)).toBe(false);
    expect((await sandboxError(() => engine.createContainer(spec({ image: 'nope:1' })))).code).toBe('IMAGE_NOT_FOUND');
    await engine.createContainer(spec({ name: 'taken' }));
    expect((await sandboxError(() => engine.createContainer(spec({ name: 'taken' })))).code).toBe('INVALID_ARGUMENT');
  });

  test('injected failures: per method, limited times, filtered by arguments', async () => {
    const engine = new FakeEngine();
    const boom = new SandboxError('ENGINE_ERROR', 'boom');
    engine.fail('hasImage', boom, { times: 1, when: (ref) => ref === 'x:1' });
    expect(await engine.hasImage('y:1')).toBe(false);
    expect(await sandboxError(() => engine.hasImage('x:1'))).toBe(boom);
    expect(await engine.hasImage('x:1')).toBe(false);
    expect(engine.callsOf('hasImage')).toEqual([['y:1'], ['x:1'], ['x:1']]);
  });

  test('command execs get the pid marker first on stderr; helpers are answered from the fake\u2019s state', async () => {
    const engine = new FakeEngine({
      images: ['alpine:3.20'],
      script: () => ({ frames: [out('hi')], exitCode: 3, hangUntilKilled: false }),
    });
    const id = await engine.createContainer(spec());
    await engine.startContainer(id);
    const c = collect();
    const cmdSpec = { cmd: wrapCommand('echo hi'), env: ['GENAICODE_DOCKER_EXEC=abc'] };
    const s = await engine.exec(id, cmdSpec, c.onOutput);
    expect(await s.done).toEqual({ exitCode: 3 });
    const pid = engine.execs[0]!.pid;
    expect(c.got).toEqual([
      ['stderr', pidMarker(pid).toString('latin1')],
      ['stdout', 'hi'],
    ]);
    expect(commandOf(cmdSpec)).toBe('echo hi');

    engine.setCgroup(id, { oomKill: 2 });
    const counters = collect();
    await (
      await engine.exec(id, { cmd: ['/bin/sh', '-c', READ_COUNTERS_SCRIPT, 'sh'], user: '0' }, counters.onOutput)
    ).done;
    expect(counters.got).toEqual([['stdout', '\x1e2:0\x1e']]);
  });

  test('the kill helper ends the hanging execs at or below its mark', async () => {
    const engine = new FakeEngine({ images: ['alpine:3.20'], script: () => ({ frames: [], exitCode: 0, hangUntilKilled: true }) });
    const id = await engine.createContainer(spec());
    await engine.startContainer(id);
    const a = await engine.exec(id, { cmd: wrapCommand('sleep 1'), env: ['M=100:5'] }, () => undefined);
    const b = await engine.exec(id, { cmd: wrapCommand('sleep 2'), env: ['M=90:7'] }, () => undefined);
    const kill = collect();
    await (
      await engine.exec(id, { cmd: ['/bin/sh', '-c', KILL_TREE_SCRIPT, 'sh', 'M=95:7', '9'], user: '0' }, kill.onOutput)
    ).done;
    expect(await b.done).toEqual({ exitCode: 137 });
    expect(kill.got).toEqual([['stdout', 'gone 1\n']]);
    expect(engine.execs[0]!.state).toBe('running');
    await (
      await engine.exec(id, { cmd: ['/bin/sh', '-c', KILL_TREE_SCRIPT, 'sh', 'M=100:5', '9'], user: '0' }, () => undefined)
    ).done;
    expect(await a.done).toEqual({ exitCode: 137 });
  });

  test('exec in a missing or stopped container is CONTAINER_NOT_FOUND', async () => {
    const engine = new FakeEngine({ images: ['alpine:3.20'] });
    expect((await sandboxError(() => engine.exec('nope', { cmd: ['true'] }, () => undefined))).code).toBe('CONTAINER_NOT_FOUND');
    const id = await engine.createContainer(spec());
    expect((await sandboxError(() => engine.exec(id, { cmd: ['true'] }, () => undefined))).code).toBe('CONTAINER_NOT_FOUND');
  });
});
