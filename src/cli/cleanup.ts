import type { Config } from '../config/config-schema.js';
import { createEngine } from '../engine/create-engine.js';
import { KubernetesEngine } from '../engine/kubernetes/kubernetes-engine.js';
import { displayText as t } from '../display-text.js';
import { sweepContainers } from '../sandbox/sweep.js';
import { settleOrphanOverlays } from '../sandbox/overlay-orphans.js';

/**
 * The start-up sweep by hand; `all` removes every managed container after listing them.
 * Names, labels and errors come from the engine (any user of it can set them): each is put
 * on its line with control characters named (`t`), so none can forge a line.
 */
export async function cleanup(config: Config, options: { all: boolean; dryRun: boolean }, out: (line: string) => void): Promise<number> {
  const engine = createEngine(config.engine);
  // Which engine is swept: a remote one holds other machines' containers too (kept unless --all).
  const info = await engine.info();
  // A cluster's pods are swept by label selector in one namespace: it is named.
  const where =
    engine instanceof KubernetesEngine
      ? ` (namespace ${t(await engine.namespace())})`
      : engine.connection !== undefined && engine.connection.kind !== 'socket'
        ? ' (remote)'
        : '';
  out(`engine ${info.kind} ${t(info.version)} at ${t(info.endpoint)}${where}`);
  if (options.all && !options.dryRun) {
    const preview = await sweepContainers(engine, { all: true, dryRun: true });
    for (const c of preview.removed) out(`will remove ${t(c.name)} (${t(c.id.slice(0, 12))}, owner ${t(c.owner)})`);
  }
  const report = await sweepContainers(engine, options);
  const verb = options.dryRun ? 'would remove' : 'removed';
  for (const c of report.removed) out(`${verb} ${t(c.name)} (${t(c.id.slice(0, 12))}): ${t(c.why)}, owner ${t(c.owner)}`);
  for (const c of report.kept) out(`kept ${t(c.name)} (${t(c.id.slice(0, 12))}): ${t(c.why)}, owner ${t(c.owner)}`);
  for (const f of report.failed) out(`FAILED to remove ${t(f.id.slice(0, 12))}: ${t(f.error)}`);
  for (const v of report.volumes ?? []) out(`removed the overlay volume ${t(v)}: its container is gone`);
  if (!options.dryRun) {
    // Overlays a killed plugin left (its container now gone): applied with the usual checks, or thrown away.
    for (const o of await settleOrphanOverlays(engine, config.logs.dir)) {
      out(
        `${o.mode === 'rw' ? `applied ${o.applied} change(s) to` : 'threw away the scratch layer of'} ${t(o.projectRoot)} left by ${t(o.container)}` +
          (o.held.length
            ? `; held back ${o.held.length}: ${o.held.slice(0, 5).map(t).join(', ')}${o.heldCopies ? ` (copies in ${t(o.heldCopies)})` : ''}`
            : ''),
      );
    }
  }
  out(`${report.removed.length} ${verb}, ${report.kept.length} kept, ${report.failed.length} failed`);
  return report.failed.length > 0 ? 1 : 0;
}
