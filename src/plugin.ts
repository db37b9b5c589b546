/**
 * The file `.genaicoderc` points at: `"plugins": ["./node_modules/genaicode-docker/dist/plugin.js"]`.
 * Its default export is the plugin with options from .genaicode-docker.json and
 * GENAICODE_DOCKER_*. To pass options in code, write a local plugin file instead:
 *   import { createDockerPlugin } from 'genaicode-docker';
 *   export default createDockerPlugin({ config: { network: 'bridge' } });
 */
import { createDockerPlugin } from './prompt/create-plugin.js';

export default createDockerPlugin();
