import { actionListLine } from '../../../src/actions/action-spec.js';
import { PROCESS_SPECS } from '../../../src/actions/process-specs.js';
import { dockerSystemPrompt } from '../../../src/prompt/system-prompt.js';
import { testConfig } from '../../support/temp-dirs.js';

/**
 * GenAIcode caps its system prompt and its own part takes most of it: our section keeps the
 * share it had before the background-process actions (2,423 characters with the default
 * configuration), and their lines in the action list stay terse.
 */
test('our system prompt section stays within about 2.4 k characters with the default configuration', () => {
  const text = dockerSystemPrompt(testConfig(), { task: true });
  expect(text).toContain('waitForPort (containerId, port)');
  expect(text.length).toBeLessThanOrEqual(2_500);
});

test('the background-process actions add at most 800 characters to the action list, none over 160', () => {
  const lines = PROCESS_SPECS.map((s) => actionListLine(s));
  for (const line of lines) expect(line.length).toBeLessThanOrEqual(160);
  expect(lines.reduce((n, l) => n + l.length, 0)).toBeLessThanOrEqual(800);
});
