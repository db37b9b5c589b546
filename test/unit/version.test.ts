import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { PACKAGE_VERSION } from '../../src/version.js';

test('PACKAGE_VERSION equals the version in package.json', () => {
  const pkg = JSON.parse(readFileSync(fileURLToPath(new URL('../../package.json', import.meta.url)), 'utf8')) as { version: string };
  expect(typeof pkg.version).toBe('string');
  expect(PACKAGE_VERSION).toBe(pkg.version);
});
