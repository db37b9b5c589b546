/**
 * The built package (dist/), which the CLI, child-process and end-to-end tests run.
 * `npm test` builds it before jest starts; no test rebuilds it, since other files' child
 * processes load it at the same time.
 */
import { existsSync, readdirSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const DIST = join(ROOT, 'dist');
export const CLI = join(DIST, 'cli', 'main.js');
export const DIST_INDEX = join(DIST, 'index.js');

function newestMtime(dir: string): number {
  let newest = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    newest = Math.max(newest, e.isDirectory() ? newestMtime(p) : statSync(p).mtimeMs);
  }
  return newest;
}

/**
 * For a beforeAll: `file` (default dist/index.js) must exist. A dist/ older than src/ only
 * warns: the tests then run the last build, not the current sources.
 */
export function requireBuiltPackage(file: string = DIST_INDEX): void {
  if (!existsSync(file)) {
    throw new Error(`${file} is missing: these tests run the built package. Run \`npm run build\` first (npm test does).`);
  }
  if (newestMtime(join(ROOT, 'src')) > statSync(file).mtimeMs) {
    console.warn(`${file} is older than src/: these tests run the built package; run \`npm run build\` to test the current sources.`);
  }
}
