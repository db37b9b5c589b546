/**
 * Jest runs the TypeScript sources as ESM (the package is ESM, like genaicode).
 * Integration and end-to-end tests need a real engine: they fail, never skip, without one.
 * @type {import('jest').Config}
 */
export default {
  preset: 'ts-jest/presets/default-esm',
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  // The real-cluster test (test/cluster/) runs when KUBECONFIG names a cluster, or when asked
  // for (and then fails loudly without one): no cluster runs where the suite usually does.
  testMatch: [
    '**/*.test.ts',
    ...(process.env.KUBECONFIG || process.env.GENAICODE_DOCKER_TEST_CLUSTER ? ['**/test/cluster/*.cluster.ts'] : []),
  ],
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
