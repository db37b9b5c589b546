/**
 * A published port must end up on 127.0.0.1 alone: an engine that bound it on another
 * address too (or instead: it ignored HostIp) gets the container refused and removed, never
 * a loopback address answered for a port other machines reach.
 */
import type { ContainerState } from '../../../src/engine/container-engine.js';
import { publishedPorts } from '../../../src/engine/docker-containers.js';
import { SandboxManager } from '../../../src/sandbox/sandbox-manager.js';
import { DEFAULT_IMAGE } from '../../../src/config/config-schema.js';
import { FakeEngine } from '../../support/fake-engine.js';
import { removeTempDirs, sandboxError, testConfig } from '../helpers.js';

afterAll(removeTempDirs);

/** An engine whose inspect lists the published ports `ports` (in the engine port's terms). */
class PortsEngine extends FakeEngine {
  constructor(private readonly ports: Record<string, string> | undefined) {
    super({ images: [DEFAULT_IMAGE] });
  }
  override async inspectContainer(idOrName: string): Promise<ContainerState | undefined> {
    const state = await super.inspectContainer(idOrName);
    return state && this.ports ? { ...state, ports: this.ports } : state;
  }
}

async function startWith(ports: Record<string, string> | undefined, publish: number[]) {
  const engine = new PortsEngine(ports);
  const manager = new SandboxManager({
    config: testConfig({ network: 'bridge', publishPorts: publish }),
    engine,
    sessionId: 'ports-unit',
    sweepOnStart: false,
  });
  try {
    return {
      engine,
      result: await manager.start({ project: 'none' }).then(
        (sb) => ({ sb }),
        (e: unknown) => ({ e }),
      ),
    };
  } finally {
    await manager[Symbol.asyncDispose]();
  }
}

describe('a port the engine did not publish on 127.0.0.1 alone', () => {
  test.each([
    ['no loopback address for it (bound elsewhere, or not at all)', undefined, [3000]],
    ['one of two ports missing', { '3000': '127.0.0.1:49153' }, [3000, 8080]],
    ['another port listed instead of the one asked for', { '8080': '127.0.0.1:49153' }, [3000]],
  ])('%s: the start is refused and the container removed', async (_name, ports, publish) => {
    const { engine, result } = await startWith(ports, publish);
    expect('e' in result).toBe(true);
    const e = await sandboxError(() => Promise.reject((result as { e: unknown }).e));
    expect(e.code).toBe('POLICY_VIOLATION');
    expect(e.message).toMatch(/127\.0\.0\.1 only/);
    expect(engine.calls.some((c) => c.method === 'removeContainer')).toBe(true);
  });

  test('every port on 127.0.0.1: the start answers their addresses', async () => {
    const { result } = await startWith({ '3000': '127.0.0.1:49153' }, [3000]);
    expect('sb' in result && result.sb.info.ports).toEqual({ '3000': '127.0.0.1:49153' });
  });
});

describe("inspect's bindings: only a port bound on 127.0.0.1 alone is reported", () => {
  test.each([
    ['a wildcard IPv4 binding', [{ HostIp: '0.0.0.0', HostPort: '49153' }]],
    ['an empty HostIp (every address)', [{ HostIp: '', HostPort: '49153' }]],
    [
      'a wildcard IPv6 binding beside the loopback one',
      [
        { HostIp: '127.0.0.1', HostPort: '49153' },
        { HostIp: '::', HostPort: '49153' },
      ],
    ],
    [
      'an outside address beside the loopback one',
      [
        { HostIp: '127.0.0.1', HostPort: '49153' },
        { HostIp: '192.168.1.5', HostPort: '49154' },
      ],
    ],
  ])('%s: not reported', (_name, bindings) => {
    expect(publishedPorts({ '3000/tcp': bindings })).toEqual({});
  });

  test('a port on 127.0.0.1 alone is reported', () => {
    expect(publishedPorts({ '3000/tcp': [{ HostIp: '127.0.0.1', HostPort: '49153' }], '53/udp': null })).toEqual({
      ports: { '3000': '127.0.0.1:49153' },
    });
  });
});
