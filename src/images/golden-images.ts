import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Config } from '../config/config-schema.js';
import { imageForLanguage, OFFLINE_BUILDABLE } from '../images/language-images.js';
import { LANGUAGES, type Language } from '../config/languages.js';
import type { ContainerEngine } from '../engine/container-engine.js';
import { SandboxError } from '../errors.js';
import { checkImageAllowed, imageMatches } from '../policy/policy.js';
import { swallowed } from '../debug.js';
import { pullFlights } from './pull-flights.js';

/**
 * The language images as a start sees them: which image a request means, whether a
 * missing one can be pulled or must be built here, and how to get it.
 */

/** The offline builder of the golden images, wherever the package is installed. */
export const BUILD_OFFLINE_SCRIPT = fileURLToPath(new URL('../../docker/build-offline.sh', import.meta.url));

/** The Dockerfile of a language's golden image. */
export function dockerfileOf(language: Language): string {
  return join(dirname(BUILD_OFFLINE_SCRIPT), language, 'Dockerfile');
}

/** The language whose image `image` is, if any. */
export function languageOfImage(config: Pick<Config, 'images'>, image: string): Language | undefined {
  return LANGUAGES.find((l) => imageForLanguage(config, l) === image);
}

export type ImageSource =
  | { kind: 'pull'; text: string }
  | { kind: 'build'; text: string }
  | { kind: 'needs-registry'; text: string }
  | { kind: 'unavailable'; text: string };

/** How a missing image is got: pulled, built here (offline or from its Dockerfile), or not at all. */
export function imageSource(config: Pick<Config, 'images'>, image: string): ImageSource {
  const language = languageOfImage(config, image);
  if (imageMatches(image, config.images.localOnly)) {
    if (!language) return { kind: 'build', text: `build it with \`bash ${BUILD_OFFLINE_SCRIPT} ${image}\` or from its Dockerfile` };
    if (OFFLINE_BUILDABLE.includes(language))
      return {
        kind: 'build',
        text: `build it with \`genaicode-docker images build ${language}\` (bash ${BUILD_OFFLINE_SCRIPT} ${language})`,
      };
    return { kind: 'needs-registry', text: `it needs a registry to build: build ${dockerfileOf(language)} where one is reachable` };
  }
  if (!config.images.pull) return { kind: 'unavailable', text: 'pulling is off (images.pull=false): build or load it first' };
  return { kind: 'pull', text: language ? `pull it with \`genaicode-docker images pull ${language}\`` : 'it is pulled on first use' };
}

/** The error of a start whose image is missing and cannot be pulled. */
export function missingImageError(config: Pick<Config, 'images'>, image: string): SandboxError {
  const source = imageSource(config, image);
  const message =
    source.kind === 'build' || source.kind === 'needs-registry'
      ? `Image ${image} is not present. It is built on this machine and never pulled (images.localOnly): ${source.text}.`
      : `Image ${image} is not present and pulling is off (images.pull=false). Build or load it first.`;
  return new SandboxError('IMAGE_NOT_FOUND', message, { data: { image } });
}

/** What a start request names: an image, a language, or neither (the project's language, else the default). */
export interface ImageRequest {
  image?: string | undefined;
  language?: Language | undefined;
}

export interface ImageChoice {
  image: string;
  /** The language that chose the image, when one did. */
  language?: Language;
  /** Why the project's language did not choose the image, when it did not. */
  note?: string;
}

/**
 * The image a start uses. An explicit language whose image is missing and cannot be pulled
 * fails here, before anyone is asked to confirm. With neither image nor language, the
 * project's language picks its image when that image is present, being pulled, or can be
 * pulled; otherwise the default image is used, with a note saying why.
 * @throws SandboxError INVALID_ARGUMENT (both image and language), IMAGE_NOT_FOUND, ENGINE_UNAVAILABLE
 */
export async function chooseImage(
  config: Pick<Config, 'images'>,
  engine: ContainerEngine,
  request: ImageRequest,
  projectLanguage?: Language,
): Promise<ImageChoice> {
  if (request.image !== undefined && request.language !== undefined) {
    throw new SandboxError(
      'INVALID_ARGUMENT',
      `Give either image or language, not both: image names the image itself, language picks that language's image (${imageForLanguage(config, request.language)}).`,
      { data: { image: request.image, language: request.language } },
    );
  }
  if (request.image !== undefined) return { image: request.image };
  if (request.language !== undefined) {
    const image = imageForLanguage(config, request.language);
    checkImageAllowed(image, config.images.allow, config.images.projectAllow);
    if (!(await usable(config, engine, image))) throw missingImageError(config, image);
    return { image, language: request.language };
  }
  const fallback = config.images.default;
  if (projectLanguage === undefined) return { image: fallback };
  const image = imageForLanguage(config, projectLanguage);
  try {
    checkImageAllowed(image, config.images.allow, config.images.projectAllow);
  } catch (e) {
    swallowed(`the project's ${projectLanguage} image`, e);
    return { image: fallback, note: `${projectLanguage} image ${image} is not on images.allow; started ${fallback}` };
  }
  if (await usable(config, engine, image)) return { image, language: projectLanguage };
  const source = imageSource(config, image);
  const why =
    source.kind === 'build'
      ? `is not built (genaicode-docker images build ${projectLanguage})`
      : source.kind === 'needs-registry'
        ? `is not built (it needs a registry: ${dockerfileOf(projectLanguage)})`
        : 'is not present and pulling is off';
  return { image: fallback, note: `${projectLanguage} image ${image} ${why}; started ${fallback}` };
}

/** Present, being pulled, or pullable. */
async function usable(config: Pick<Config, 'images'>, engine: ContainerEngine, image: string): Promise<boolean> {
  if (pullFlights.inFlight(engine, image)) return true;
  if (imageSource(config, image).kind === 'pull') return true;
  return engine.hasImage(image);
}
