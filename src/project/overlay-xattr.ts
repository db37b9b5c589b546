import { createRequire } from 'node:module';
import { swallowed } from '../debug.js';

/**
 * Whether a folder of the upper layer is opaque: the container removed the project's folder
 * and made one again, so nothing of the project's shows through it. The kernel says so in
 * an extended attribute (`user.overlay.opaque`, the mount's `userxattr` option, readable by
 * the folder's owner without privileges), which Node cannot read itself: the
 * `@napi-rs/xattr` binding reads it, without following a link.
 */
type XattrBinding = { getAttributeSync(path: string, name: string): Buffer | null };

let binding: XattrBinding | null | undefined;

function load(): XattrBinding | null {
  if (binding === undefined) {
    try {
      binding = createRequire(import.meta.url)('@napi-rs/xattr') as XattrBinding;
    } catch (e) {
      swallowed('loading the extended attribute binding', e);
      binding = null;
    }
  }
  return binding;
}

/** Whether the binding loads on this platform (a writable project needs it). */
export function canReadOpaque(): boolean {
  return load() !== null;
}

export function isOpaque(path: string): boolean {
  const b = load();
  if (!b) throw new Error('extended attributes cannot be read on this platform');
  return b.getAttributeSync(path, 'user.overlay.opaque')?.toString() === 'y';
}
