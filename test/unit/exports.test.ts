import * as api from '../../src/index.js';

test('src/index.ts has exactly these runtime named exports (and no default)', () => {
  expect(Object.keys(api).sort()).toEqual(
    [
      'CANCELED_EXIT_CODE',
      'CODE_LANGUAGES',
      'CONFIG_FILE_NAME',
      'CodeExecutor',
      'ConfigSchema',
      'DEFAULT_ALLOWED_IMAGES',
      'DEFAULT_IMAGE',
      'DockerEngine',
      'KubernetesEngine',
      'createEngine',
      'INVARIANTS',
      'LABEL',
      'LANGUAGES',
      'PACKAGE_VERSION',
      'SANDBOX_ERROR_CODES',
      'ERROR_CODES',
      'FILE_OPERATION_REASONS',
      'Sandbox',
      'SandboxError',
      'SandboxManager',
      'TIMEOUT_EXIT_CODE',
      'buildCodeAnswer',
      'buildCommandAnswer',
      'createDockerPlugin',
      'detectProjectLanguage',
      'imageForLanguage',
      'extractiveSummary',
      'keyLines',
      'checkImageAllowed',
      'isSandboxError',
      'loadConfig',
      'newSessionId',
      'parseByteSize',
      'resolveConnection',
      'sweepContainers',
    ].sort(),
  );
});

test('the exit-code constants are the documented ones', () => {
  expect(api.TIMEOUT_EXIT_CODE).toBe(124);
  expect(api.CANCELED_EXIT_CODE).toBe(137);
});
