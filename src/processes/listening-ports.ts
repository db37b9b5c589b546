/** A socket in the LISTEN state: its port and the address it listens on, as the kernel lists it. */
export interface ListeningSocket {
  port: number;
  address: string;
}

/** The `st` column of /proc/net/tcp for TCP_LISTEN. */
const LISTEN = '0A';

/**
 * The listening sockets in the text of /proc/net/tcp and /proc/net/tcp6 (scripts/container/net-tcp.sh):
 * each row is `sl local_address rem_address st ...`, the local address `<hex ip>:<hex port>`.
 * Rows that are not a socket table's (the header, anything else) are skipped.
 */
export function listeningSockets(text: string): ListeningSocket[] {
  const found: ListeningSocket[] = [];
  for (const line of text.split('\n')) {
    const f = line.trim().split(/\s+/);
    if (f.length < 4 || !/^\d+:$/.test(f[0]!) || f[3] !== LISTEN) continue;
    const m = /^([0-9A-Fa-f]{8}|[0-9A-Fa-f]{32}):([0-9A-Fa-f]{4})$/.exec(f[1]!);
    if (!m) continue;
    found.push({ port: parseInt(m[2]!, 16), address: hexAddress(m[1]!) });
  }
  return found;
}

/**
 * The kernel prints an address as the 32-bit words of its network-order bytes, each word in
 * the machine's order (little-endian on every machine the engine runs containers on here).
 */
function hexAddress(hex: string): string {
  const words = hex.match(/.{8}/g)!.map((w) => Buffer.from(w, 'hex').reverse());
  const bytes = Buffer.concat(words);
  if (bytes.length === 4) return [...bytes].join('.');
  if (bytes.subarray(0, 12).equals(Buffer.from('00000000000000000000ffff', 'hex'))) return [...bytes.subarray(12)].join('.');
  const groups: string[] = [];
  for (let i = 0; i < 16; i += 2) groups.push(bytes.readUInt16BE(i).toString(16));
  return groups.join(':').replace(/(^|:)0(:0)+(:|$)/, '::');
}
