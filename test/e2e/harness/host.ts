/**
 * Which GenAIcode the end-to-end suite drives. By default the 0.9.5 in this repository's
 * node_modules; `GENAICODE_E2E_HOST=<folder of a genaicode package>` picks another (the
 * 1.x line: `npm run test:e2e:1x` installs one and sets it). Every scenario runs through
 * that host's real dispatcher; what differs between hosts is named here once.
 */
import { readFileSync, realpathSync } from 'node:fs';
import path from 'node:path';
import { ROOT } from '../../support/built-package.js';

export const E2E_HOST_ROOT = realpathSync(process.env.GENAICODE_E2E_HOST || path.join(ROOT, 'node_modules', 'genaicode'));

const version = (JSON.parse(readFileSync(path.join(E2E_HOST_ROOT, 'package.json'), 'utf-8')) as { version: string }).version;
const major = Number(version.split('.')[0]);

export const E2E_HOST = {
  root: E2E_HOST_ROOT,
  version,
  /** The function through which the model picks an action. */
  dispatcher: major >= 1 ? 'iterate' : 'askQuestion',
  /** The model tiers the plugin asks for: summaries and task steps on `lite` (0.9.5 has none: cheap). */
  tiers: { lite: major >= 1 ? 'lite' : 'cheap', cheap: 'cheap', default: 'default' },
} as const;
