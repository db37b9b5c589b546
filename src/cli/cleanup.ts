import type { Config } from '../config/config-schema.js';
import { DockerEngine } from '../engine/docker-engine.js';
import { sweepContainers } from '../sandbox/sweep.js';

/** The start-up sweep by hand; `all` removes every managed container after listing them. */
export async function cleanup(config: Config, options: { all: boolean; dryRun: boolean }, out: (line: string) => void): Promise<number> {
  const engine = new DockerEngine(config.engine);
  if (options.all && !options.dryRun) {
    const preview = await sweepContainers(engine, { all: true, dryRun: true });
    for (const c of preview.removed) out(`will remove ${c.name} (${c.id.slice(0, 12)}, owner ${c.owner})`);
  }
  const report = await sweepContainers(engine, options);
  const verb = options.dryRun ? 'would remove' : 'removed';
  for (const c of report.removed) out(`${verb} ${c.name} (${c.id.slice(0, 12)}): ${c.why}, owner ${c.owner}`);
  for (const c of report.kept) out(`kept ${c.name} (${c.id.slice(0, 12)}): ${c.why}, owner ${c.owner}`);
  for (const f of report.failed) out(`FAILED to remove ${f.id.slice(0, 12)}: ${f.error}`);
  out(`${report.removed.length} ${verb}, ${report.kept.length} kept, ${report.failed.length} failed`);
  return report.failed.length > 0 ? 1 : 0;
}
