import { lstatSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { swallowed } from '../debug.js';
import { namesRegistry } from '../policy/image-ref.js';
import type { Config } from './config-schema.js';

/**
 * The languages of the golden images (docker/<language>/), and which one a project is
 * written in. Each language's image is `genaicode-docker/<language>:latest` unless
 * `images.languages` names another; `images.registry` is put in front of those that name no
 * registry of their own.
 */

export const LANGUAGES = ['python', 'nodejs', 'java', 'go', 'ruby', 'php', 'dotnet', 'powershell'] as const;
export type Language = (typeof LANGUAGES)[number];

/** The languages docker/build-offline.sh builds from Debian packages; the others need a registry to build. */
export const OFFLINE_BUILDABLE: readonly Language[] = ['python', 'nodejs', 'java', 'go', 'ruby', 'php'];

export function isLanguage(value: unknown): value is Language {
  return typeof value === 'string' && (LANGUAGES as readonly string[]).includes(value);
}

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

/**
 * The marker files of each language, in the order a project with several is decided:
 * build files that name a toolchain outright first (go.mod, pom.xml, ...), package.json
 * late (many projects of other languages carry one for their front-end tools), and *.ps1
 * last (scripts sit beside every kind of project).
 */
const MARKERS: ReadonlyArray<{ language: Language; names?: readonly string[]; suffixes?: readonly string[] }> = [
  { language: 'go', names: ['go.mod'] },
  { language: 'java', names: ['pom.xml', 'build.gradle', 'build.gradle.kts'] },
  { language: 'dotnet', suffixes: ['.csproj', '.sln'] },
  { language: 'python', names: ['pyproject.toml', 'requirements.txt', 'setup.py'] },
  { language: 'ruby', names: ['Gemfile'] },
  { language: 'php', names: ['composer.json'] },
  { language: 'nodejs', names: ['package.json'] },
  { language: 'powershell', suffixes: ['.ps1'] },
];

/** Top-level entries we read at most: a folder with more is not a project root we can judge. */
const MAX_ENTRIES = 10_000;

/**
 * The project's language, from the marker files at the top of its root (never a sub-folder,
 * and a link is not a marker: nothing outside the project is read). Undefined when none
 * matches or the folder cannot be read. Priority when several match: go, java, dotnet,
 * python, ruby, php, nodejs, powershell.
 */
export function detectProjectLanguage(projectRoot: string): Language | undefined {
  let names: string[];
  try {
    names = readdirSync(projectRoot).slice(0, MAX_ENTRIES);
  } catch (e) {
    swallowed(`reading ${projectRoot} for its language`, e); // no folder, no language: the default image is used
    return undefined;
  }
  const isFile = (name: string): boolean => {
    try {
      return lstatSync(join(projectRoot, name)).isFile();
    } catch (e) {
      swallowed(`a marker file that went away: ${name}`, e);
      return false;
    }
  };
  for (const marker of MARKERS) {
    const hit = names.some(
      (n) => (marker.names?.includes(n) || marker.suffixes?.some((s) => n.endsWith(s) && n.length > s.length)) && isFile(n),
    );
    if (hit) return marker.language;
  }
  return undefined;
}
