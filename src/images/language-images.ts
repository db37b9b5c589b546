import { namesRegistry } from '../policy/image-ref.js';
import type { Config } from '../config/config-schema.js';
import type { Language } from '../config/languages.js';

/**
 * The image of each golden language: `genaicode-docker/<language>:latest` unless
 * `images.languages` names another; `images.registry` is put in front of those that name no
 * registry of their own.
 */

/** The languages docker/build-offline.sh builds from Debian packages; the others need a registry to build. */
export const OFFLINE_BUILDABLE: readonly Language[] = ['python', 'nodejs', 'java', 'go', 'ruby', 'php'];

/** A language's image when nothing configures another. */
export function defaultLanguageImage(language: Language): string {
  return `genaicode-docker/${language}:latest`;
}

/** The image of a language: `images.languages`, else the golden image; with `images.registry` in front when the name has no registry. */
export function imageForLanguage(config: Pick<Config, 'images'>, language: Language): string {
  const image = config.images.languages[language] ?? defaultLanguageImage(language);
  const registry = config.images.registry?.replace(/\/+$/, '');
  if (!registry) return image;
  const first = image.split('/')[0]!;
  return image.includes('/') && namesRegistry(first) ? image : `${registry}/${image}`;
}
