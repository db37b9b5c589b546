import type { StreamId } from './container-engine.js';

const HEADER = 8;

/**
 * Splits the engine's multiplexed exec stream into stdout and stderr, frame by frame.
 * Each frame is an 8-byte header (stream type, 3 zero bytes, big-endian payload length)
 * and its payload; chunks from the socket cut frames (and headers) anywhere, so partial
 * headers are kept between pushes. Payload bytes are passed on as sub-views, not copies.
 */
export class FrameDemuxer {
  private header = Buffer.alloc(HEADER);
  private headerFill = 0;
  private remaining = 0;
  private stream: StreamId = 'stdout';

  constructor(private readonly onFrame: (stream: StreamId, payload: Buffer) => void) {}

  push(chunk: Buffer): void {
    let pos = 0;
    const len = chunk.length;
    while (pos < len) {
      if (this.remaining > 0) {
        const take = Math.min(this.remaining, len - pos);
        this.onFrame(this.stream, chunk.subarray(pos, pos + take));
        this.remaining -= take;
        pos += take;
        continue;
      }
      if (this.headerFill === 0 && len - pos >= HEADER) {
        this.begin(chunk[pos]!, chunk.readUInt32BE(pos + 4));
        pos += HEADER;
        continue;
      }
      const take = Math.min(HEADER - this.headerFill, len - pos);
      chunk.copy(this.header, this.headerFill, pos, pos + take);
      this.headerFill += take;
      pos += take;
      if (this.headerFill === HEADER) {
        this.headerFill = 0;
        this.begin(this.header[0]!, this.header.readUInt32BE(4));
      }
    }
  }

  /** True when the stream ended on a frame boundary. */
  get complete(): boolean {
    return this.remaining === 0 && this.headerFill === 0;
  }

  private begin(type: number, size: number): void {
    // 0 is stdin (echoed only with a TTY), 1 stdout, 2 stderr; anything else we treat as stdout.
    this.stream = type === 2 ? 'stderr' : 'stdout';
    this.remaining = size;
  }
}
