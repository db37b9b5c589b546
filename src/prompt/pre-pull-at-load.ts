import { swallowed } from '../debug.js';
import { prePullImages } from '../images/pre-pull.js';
import type { PluginRuntime } from './plugin-runtime.js';

/**
 * `images.prePull` once the plugin has loaded: in the background, reported as a few system
 * messages. Nothing here is awaited at load, and the pulls hold no timer or connection that
 * keeps the process alive (a start that joins one does, while it waits). Never rejects.
 */
export async function prePullAtLoad(runtime: PluginRuntime): Promise<void> {
  try {
    await prePullImages({
      config: runtime.config(),
      engine: runtime.manager().engine,
      projectLanguage: runtime.projectLanguage(),
      report: (text) => {
        runtime.host().then(
          (host) => host.systemMessage(text),
          (e: unknown) => swallowed('host services for a pre-pull message', e),
        );
      },
    });
  } catch (e) {
    swallowed('pre-pull at load', e);
  }
}
