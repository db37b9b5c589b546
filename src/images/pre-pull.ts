import type { Config } from '../config/config-schema.js';
import { imageForLanguage } from '../images/language-images.js';
import { type Language } from '../config/languages.js';
import type { ContainerEngine } from '../engine/container-engine.js';
import { PullLayers } from '../images/pull-layers.js';
import { swallowed } from '../debug.js';
import { checkImageAllowed } from '../policy/policy.js';
import { imageSource } from './golden-images.js';
import { pullFlights, type PullFlights } from './pull-flights.js';

export interface PrePullOptions {
  config: Pick<Config, 'images'>;
  engine: ContainerEngine;
  /** The project's detected language, for `images.prePull: 'project'`. */
  projectLanguage?: Language | undefined;
  /** A few lines for the user: start, each quarter, done or failed; how to build an image that is not built. */
  report: (text: string) => void;
  /** @default the process's pulls in flight */
  flights?: PullFlights;
}

/** The languages `images.prePull` names. */
export function prePullLanguages(prePull: Config['images']['prePull'], projectLanguage: Language | undefined): Language[] {
  if (prePull === false) return [];
  if (prePull === 'project') return projectLanguage ? [projectLanguage] : [];
  return [...new Set(prePull)];
}

/**
 * Gets the language images ready in the background: a present image is left alone, a
 * pullable one is pulled (a start that needs it meanwhile waits for the same pull), and a
 * missing one that is built here is reported once with how to build it. Never throws.
 */
export async function prePullImages(options: PrePullOptions): Promise<void> {
  const { config, engine, report } = options;
  const flights = options.flights ?? pullFlights;
  for (const language of prePullLanguages(config.images.prePull, options.projectLanguage)) {
    const image = imageForLanguage(config, language);
    try {
      checkImageAllowed(image, config.images.allow, config.images.projectAllow);
      if (await engine.hasImage(image)) continue;
      const source = imageSource(config, image);
      if (source.kind !== 'pull') {
        report(`genaicode-docker: the ${language} image ${image} is not present; ${source.text}.`);
        continue;
      }
      await pullWithReports(flights, engine, image, language, report);
    } catch (e) {
      swallowed(`pre-pull of ${image}`, e);
    }
  }
}

async function pullWithReports(
  flights: PullFlights,
  engine: ContainerEngine,
  image: string,
  language: Language,
  report: (text: string) => void,
): Promise<void> {
  const started = Date.now();
  const layers = new PullLayers(image);
  let quarter = 0;
  report(`genaicode-docker: pulling the ${language} image ${image} in the background.`);
  try {
    await flights.pull(engine, image, {
      background: true,
      onProgress: (p) => {
        layers.update(p);
        const reached = Math.floor((layers.fraction() ?? 0) * 4);
        if (reached > quarter && reached < 4) {
          quarter = reached;
          report(`genaicode-docker: pulling ${image}: ${quarter * 25}%`);
        }
      },
    });
    report(`genaicode-docker: pulled ${image} in ${Math.round((Date.now() - started) / 1000)} s.`);
  } catch (e) {
    report(`genaicode-docker: the pull of ${image} failed: ${e instanceof Error ? e.message : String(e)}`);
    throw e;
  }
}
