import type { Config } from '../config/config-schema.js';
import { answerForModel, buildCommandAnswer } from '../answer/command-answer.js';
import { LABEL, MANAGED_FILTER } from '../sandbox/labels.js';
import { SandboxManager } from '../sandbox/sandbox-manager.js';

const STEPS = [
  { title: 'a command that succeeds', cmd: 'echo "hello from $(hostname)"; uname -sm; ls /', timeoutMs: 10_000 },
  {
    title: 'a command that fails (exit 2, stderr)',
    cmd: 'echo "running checks"; echo "error: config.yaml: no such file" >&2; exit 2',
    timeoutMs: 10_000,
  },
  {
    title: 'huge output (50 MB; the model sees a capped, summarized answer with the error from the middle; the log has every byte)',
    cmd:
      'echo "compiling 40 modules"; yes "build log line with some text" | head -c 6000000; echo; ' +
      'echo "ld: error: undefined reference to \'parse_config\'"; yes "build log line with some text" | head -c 44000000; echo; echo "build finished with 1 error"',
    timeoutMs: 60_000,
  },
  { title: 'a command that times out (its process tree is killed)', cmd: 'sleep 1000 & sleep 1000', timeoutMs: 2_000 },
];

/**
 * The main job, end to end on the real engine: one sandbox, four commands through the
 * exact exec pipeline, each result printed as the model would get it (here with the
 * extractive summary: the CLI has no model), then the sandbox is removed.
 */
export async function demo(config: Config, out: (line: string) => void): Promise<number> {
  const manager = new SandboxManager({ config });
  try {
    const t0 = performance.now();
    const sandbox = await manager.start({});
    out(
      `started ${sandbox.name} (${sandbox.info.image}) in ${Math.round(performance.now() - t0)} ms; memory ${Math.round(sandbox.info.memoryBytes / 1024 ** 2)} MiB, pids ${sandbox.info.pidsLimit}, network ${config.network}`,
    );
    let ok = true;
    for (const [i, step] of STEPS.entries()) {
      out(`\n[${i + 1}/${STEPS.length}] ${step.title}\n$ ${step.cmd}`);
      const result = await sandbox.exec(step.cmd, { timeoutMs: step.timeoutMs });
      const answer = await buildCommandAnswer(result, { thresholdBytes: config.plugin.summaryThresholdBytes });
      const seen = answerForModel(answer);
      out(`model sees (${JSON.stringify(seen).length} chars, ${result.durationMs} ms; full log: ${answer.logPath}):`);
      out(JSON.stringify(seen, null, 2));
      if (i === 0) ok &&= result.exitCode === 0;
      if (i === 1) ok &&= result.exitCode === 2;
      if (i === 2)
        ok &&= result.truncated && result.bytes.stdout > 50_000_000 && !!answer.keyLines?.some((l) => l.includes('undefined reference'));
      if (i === 3) ok &&= result.timedOut && result.exitCode === 124;
    }
    await sandbox.stop();
    // This session's containers only: other processes' containers (ending, or orphans a
    // sweep would take) are not the demo's to judge.
    const left = await manager.engine.listContainers({ ...MANAGED_FILTER, [LABEL.session]: manager.sessionId });
    out(`\nstopped and removed ${sandbox.name}; full logs in ${manager.logs.sessionDir}`);
    if (left.length > 0) out(`demo: LEFT BEHIND: ${left.map((c) => `${c.names[0] ?? c.id} (${c.state})`).join(', ')}`);
    out(ok ? 'demo: all four results as expected' : 'demo: UNEXPECTED results above');
    return ok && left.length === 0 ? 0 : 1;
  } finally {
    await manager.stopAll();
  }
}
