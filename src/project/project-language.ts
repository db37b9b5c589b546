import { lstatSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { swallowed } from '../debug.js';
import type { Language } from '../config/languages.js';

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
