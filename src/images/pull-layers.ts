import type { PullProgress } from '../engine/container-engine.js';

/** One layer of a pull, as its progress events leave it. */
export interface LayerState {
  id: string;
  status: string;
  /** Bytes downloaded, and of how many, while it downloads; equal once it is complete. */
  current?: number;
  total?: number;
  /** All its bytes are here (downloaded, or already present). */
  done: boolean;
}

/** Statuses after which a layer's bytes are all here. */
const LAYER_DOWNLOADED = /^(download complete|pull complete|already exists)$/i;

/**
 * The layers of one pull from its progress events: each layer's last status and download
 * progress (extraction's own counters are not mixed in), and the share downloaded so far.
 * Events that name the image rather than a layer are left out.
 */
export class PullLayers {
  private readonly byId = new Map<string, LayerState>();

  constructor(private readonly ref: string) {}

  /** @returns the layer the event was about, or undefined for an event about the whole image. */
  update(p: PullProgress): LayerState | undefined {
    if (p.id === this.ref || !/^[0-9a-f]{6,}$/i.test(p.id)) return undefined;
    let layer = this.byId.get(p.id);
    if (!layer) this.byId.set(p.id, (layer = { id: p.id, status: p.status, done: false }));
    layer.status = p.status;
    if (/^downloading$/i.test(p.status) && p.total !== undefined && p.total > 0) {
      layer.total = p.total;
      layer.current = Math.min(p.current ?? 0, p.total);
    }
    if (LAYER_DOWNLOADED.test(p.status)) {
      layer.done = true;
      if (layer.total !== undefined) layer.current = layer.total;
    }
    return layer;
  }

  layers(): LayerState[] {
    return [...this.byId.values()];
  }

  /** Share of the known bytes downloaded (0..1), or undefined before any layer says its size. */
  fraction(): number | undefined {
    let current = 0;
    let total = 0;
    for (const l of this.byId.values()) {
      if (l.total === undefined) continue;
      total += l.total;
      current += l.done ? l.total : (l.current ?? 0);
    }
    return total > 0 ? current / total : undefined;
  }
}
