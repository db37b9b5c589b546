/**
 * scripts/engine/second-engine.sh never touches the main engine: started again on the data
 * root it left, a dockerd deletes the default bridge network it finds in its store, and with
 * it the main engine's docker0 (dockerd 20.10), after which no container of the main engine
 * can start on the bridge network. A third engine of its own (folder, port, bridge, address
 * pool) is started and stopped twice here, and the main engine's bridge network is used after each.
 */
import { execFile } from 'node:child_process';
import { docker, engineSuite, MINIMAL_IMAGE } from '../../support/engine.js';
import { SECOND_ENGINE_SCRIPT } from '../../support/second-engine.js';
import { tempDir } from '../../support/temp-dirs.js';

engineSuite('second-engine-script');

function script(args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number; stderr: string }> {
  return new Promise((resolve) => {
    execFile('bash', [SECOND_ENGINE_SCRIPT, ...args], { env, timeout: 240_000, encoding: 'utf8' }, (error, _stdout, stderr) => {
      resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stderr });
    });
  });
}

test('started again on its own data root, an engine of the script leaves the main engine a working bridge network', async () => {
  const env = {
    ...process.env,
    GENAICODE_SECOND_ENGINE_DIR: tempDir('gcd-third-engine-'),
    GENAICODE_SECOND_ENGINE_PORT: '23762',
    GENAICODE_SECOND_ENGINE_BRIDGE: 'gcd3br0',
    GENAICODE_SECOND_ENGINE_BRIDGE_ADDR: '10.215.0.1/24',
    GENAICODE_SECOND_ENGINE_POOL: '10.216.0.0/16',
    GENAICODE_SECOND_ENGINE_IMAGES: '',
  };
  try {
    for (const round of [1, 2]) {
      const started = await script(['start'], env);
      expect({ round, code: started.code, stderr: started.code ? started.stderr : '' }).toEqual({ round, code: 0, stderr: '' });
      const run = await docker(['run', '--rm', '--network', 'bridge', MINIMAL_IMAGE, 'echo', 'on the bridge']);
      expect({ round, stdout: run.stdout, stderr: run.stderr }).toEqual({ round, stdout: 'on the bridge\n', stderr: '' });
      expect((await script(['stop'], env)).code).toBe(0);
    }
  } finally {
    await script(['purge'], env);
  }
}, 300_000);
