/**
 * Jest runs the TypeScript sources as ESM (the package is ESM, like genaicode).
 * Integration and end-to-end tests need a real engine: they fail, never skip, without one.
 * @type {import('jest').Config}
 */
export default {
  preset: 'ts-jest/presets/default-esm',
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  moduleNameMapper: {
    '^(\\.{1,2}/.*)\\.js$': '$1',
  },
  transform: {
    '^.+\\.ts$': ['ts-jest', { useESM: true, tsconfig: 'tsconfig.json', diagnostics: false }],
  },
  // Integration tests share one engine on a 2-core machine.
  maxWorkers: 2,
  testTimeout: 120_000,
};
