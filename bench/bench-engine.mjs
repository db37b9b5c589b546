// The engine the benchmarks measure, set up the same way for bench/run.mjs and bench/profile.mjs.
import { join } from 'node:path';
import Docker from 'dockerode';
import { loadConfig, resolveConnection } from '../dist/index.js';

/**
 * The default config under the throw-away project root `tmp`, with only the engine address
 * taken from the environment, so results do not depend on a developer's GENAICODE_DOCKER_*
 * settings (logs go to <tmp>/logs, not the user's state folder). Points DOCKER_HOST, and so the docker
 * CLI children, at the same engine, and gives a raw dockerode client for the baselines.
 * Exits on a TLS engine: the raw baselines speak to a unix socket or plain tcp only.
 */
export function benchEngine(tmp, overrides = {}) {
  const env = Object.fromEntries(
    Object.entries(process.env).filter(([k]) => k === 'GENAICODE_DOCKER_HOST' || k === 'GENAICODE_DOCKER_SOCKET_PATH'),
  );
  const { logs, ...rest } = overrides;
  const config = loadConfig({ cwd: tmp, env, overrides: { logs: { dir: join(tmp, 'logs'), ...logs }, ...rest } });
  const connection = resolveConnection(config.engine);
  if (connection.kind !== 'socket' && connection.protocol === 'https') {
    console.error('The benchmarks speak to a unix socket or plain tcp engine only (TLS is not wired into the raw baselines).');
    process.exit(2);
  }
  process.env.DOCKER_HOST =
    connection.kind === 'socket' ? `unix://${connection.socketPath}` : `tcp://${connection.host}:${connection.port}`;
  const dockerode = new Docker(
    connection.kind === 'socket'
      ? { socketPath: connection.socketPath }
      : { host: connection.host, port: connection.port, protocol: 'http' },
  );
  return { config, connection, dockerode };
}
