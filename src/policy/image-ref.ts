import { SandboxError } from '../errors.js';

/**
 * Docker's image reference grammar (distribution/reference), checked before an image
 * name reaches the allowlist, the user or the engine:
 *
 *   reference  := name [ ":" tag ] [ "@" digest ]
 *   name       := [ domain "/" ] path-component ( "/" path-component )*
 *   domain     := domain-component ( "." domain-component )* [ ":" port ]  |  "[" ipv6 "]" [ ":" port ]
 *   path-component := [a-z0-9]+ ( ( "." | "_" | "__" | "-"+ ) [a-z0-9]+ )*
 *   tag        := [A-Za-z0-9_] [A-Za-z0-9_.-]{0,127}
 *   digest     := algorithm ":" hex{32,}
 *
 * A name is at most 255 characters. The first component is a registry only when it has a
 * "." or ":" or is "localhost" (as Docker decides). So `genaicode-docker/.` (an empty-ish
 * component the engine answers with a redirect), `..`, upper case in a path, `a//b`, a
 * space, `?`, `#` or `%` never get further than this.
 */

const PATH_COMPONENT = /^[a-z0-9]+(?:(?:\.|_|__|-+)[a-z0-9]+)*$/;
const DOMAIN_COMPONENT = /^(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])$/;
const IPV6_HOST = /^\[[0-9A-Fa-f:.]+\]$/;
const TAG = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$/;
const DIGEST = /^[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}$/;
const MAX_NAME_LENGTH = 255;
/** Longest reference we accept at all: a full name, a tag and a sha512 digest. */
const MAX_REFERENCE_LENGTH = MAX_NAME_LENGTH + 1 + 128 + 1 + 7 + 1 + 128;

interface ImageReference {
  /** Registry host[:port], when the reference names one. */
  domain?: string;
  /** The repository path, e.g. `library/python` or `genaicode-docker/sandbox-python`. */
  path: string;
  tag?: string;
  digest?: string;
}

function isDomain(s: string): boolean {
  const colon = s.lastIndexOf(':');
  let host = s;
  if (colon !== -1 && !s.endsWith(']')) {
    const port = s.slice(colon + 1);
    if (!/^\d{1,5}$/.test(port) || Number(port) > 65535) return false;
    host = s.slice(0, colon);
  }
  if (IPV6_HOST.test(host)) return true;
  return host.split('.').every((c) => DOMAIN_COMPONENT.test(c));
}

/** Whether the first component of a name is a registry (as Docker decides): it has a `.` or a `:`, or is `localhost`. */
export function namesRegistry(first: string): boolean {
  return first.includes('.') || first.includes(':') || first === 'localhost';
}

/** Splits and checks a reference: the parts, or why it is not one. */
function analyse(ref: string): { ok: ImageReference } | { problem: string } {
  if (typeof ref !== 'string' || ref.length === 0) return { problem: 'it is empty' };
  if (ref.length > MAX_REFERENCE_LENGTH) return { problem: `it is longer than ${MAX_REFERENCE_LENGTH} characters` };
  let rest = ref;
  let digest: string | undefined;
  const at = rest.indexOf('@');
  if (at !== -1) {
    digest = rest.slice(at + 1);
    if (!DIGEST.test(digest)) return { problem: 'its digest is not <algorithm>:<at least 32 hex digits>' };
    rest = rest.slice(0, at);
  }
  let tag: string | undefined;
  const colon = rest.indexOf(':', rest.lastIndexOf('/') + 1);
  if (colon !== -1) {
    tag = rest.slice(colon + 1);
    if (!TAG.test(tag)) return { problem: 'its tag must be 1-128 of A-Z a-z 0-9 _ . - and not start with . or -' };
    rest = rest.slice(0, colon);
  }
  if (rest.length === 0) return { problem: 'it has no name' };
  if (rest.length > MAX_NAME_LENGTH) return { problem: `its name is longer than ${MAX_NAME_LENGTH} characters` };
  const parts = rest.split('/');
  const first = parts[0]!;
  const hasDomain = parts.length > 1 && namesRegistry(first);
  if (hasDomain && !isDomain(first)) return { problem: `its registry ${JSON.stringify(first)} is not a host name with an optional port` };
  const path = hasDomain ? parts.slice(1) : parts;
  for (const c of path) {
    if (c === '') return { problem: 'it has an empty path component (// or a leading or trailing /)' };
    if (!PATH_COMPONENT.test(c))
      return { problem: `its path component ${JSON.stringify(c)} is not lower-case letters and digits joined by . _ __ or -` };
  }
  return {
    ok: {
      ...(hasDomain ? { domain: first } : {}),
      path: path.join('/'),
      ...(tag !== undefined ? { tag } : {}),
      ...(digest !== undefined ? { digest } : {}),
    },
  };
}

/** Why `ref` is not an image reference, or undefined when it is one. */
export function imageReferenceProblem(ref: string): string | undefined {
  const r = analyse(ref);
  return 'problem' in r ? r.problem : undefined;
}

/**
 * Parses an image reference.
 * @throws SandboxError INVALID_ARGUMENT naming what is wrong with it.
 */
export function parseImageReference(ref: string): ImageReference {
  const r = analyse(ref);
  if ('ok' in r) return r.ok;
  const shown = String(ref).length > 300 ? `${String(ref).slice(0, 300)}…` : String(ref);
  throw new SandboxError('INVALID_ARGUMENT', `${JSON.stringify(shown)} is not a valid image reference: ${r.problem}.`, {
    data: { image: shown },
  });
}
