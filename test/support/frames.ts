/**
 * One frame of the engine's multiplexed exec stream: an 8-byte header (stream type 1 for
 * stdout, 2 for stderr; three zero bytes; big-endian payload length) and the payload.
 */
export function frame(type: number, payload: string | Buffer): Buffer {
  const body = typeof payload === 'string' ? Buffer.from(payload) : payload;
  const header = Buffer.alloc(8);
  header[0] = type;
  header.writeUInt32BE(body.length, 4);
  return Buffer.concat([header, body]);
}
