import type { Config } from '../config.js';
import { DockerEngine } from '../engine/docker-engine.js';
import { sweepContainers } from '../sandbox/sweep.js';
import { displayText } from '../display-text.js';

/** The start-up sweep by hand; `all` removes every managed container after listing them. */
export async function cleanup(config: Config, options: { all: boolean; dryRun: boolean }, out: (line: string) => void): Promise<number> {
  const engine = new DockerEngine(config.engine);
  if (options.all && !options.dryRun) {
    const preview = await sweepContainers(engine, { all: true, dryRun: true });
    for (const c of preview.removed) out(`will remove ${displayText(c.name)} (${c.id.slice(0, 12)}, owner ${displayText(c.owner)})`);
  }
  const report = await sweepContainers(engine, options);
  const verb = options.dryRun ? 'would remove' : 'removed';
  for (const c of report.removed) out(`${verb} ${displayText(c.name)} (${c.id.slice(0, 12)}): ${c.why}, owner ${displayText(c.owner)}`);
  for (const c of report.kept) out(`kept ${displayText(c.name)} (${c.id.slice(0, 12)}): ${c.why}, owner ${displayText(c.owner)}`);
  for (const f of report.failed) out(`FAILED to remove ${displayText(f.id.slice(0, 12))}: ${displayText(f.error)}`);
  out(`${report.removed.length} ${verb}, ${report.kept.length} kept, ${report.failed.length} failed`);
  return report.failed.length > 0 ? 1 : 0;
}
