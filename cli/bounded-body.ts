/** Reading an HTTP response body with a bound in bytes (watch-moves' meter reads /metrics through the pod proxy). */
import type * as http from 'node:http';

/**
 * The body of `res` decoded as UTF-8 once it has ended, or `tooLarge` called as soon as more than `maxBytes`
 * bytes have arrived (counted as received, before any decoding: a length in UTF-16 characters let up to three
 * times the bound through for multi-byte text). A character split across chunks is decoded whole.
 */
export function readBoundedBody(res: http.IncomingMessage, maxBytes: number, done: (body: string) => void, tooLarge: (e: Error) => void): void {
  const chunks: Buffer[] = [];
  let bytes = 0;
  let over = false;
  res.on('data', (c: Buffer) => {
    if (over) return;
    bytes += c.length;
    if (bytes > maxBytes) { over = true; chunks.length = 0; tooLarge(new Error(`more than ${maxBytes} bytes`)); return; }
    chunks.push(c);
  });
  res.on('end', () => { if (!over) done(Buffer.concat(chunks).toString('utf8')); });
}
