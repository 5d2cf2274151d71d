#!/usr/bin/env node
/**
 * Endpoint tool for the network-namespace tests and the benchmark (runs inside `ip netns exec`).
 *   tool sink HOST PORT           hash what arrives; on the client's FIN reply "<sha256> <bytes>" and end
 *   tool send HOST PORT BYTES [PACE_MS]
 *                                 send BYTES (1 MiB blocks, paced if PACE_MS), half-close, print JSON
 *                                 {sent, reply, ms, error}
 */
import * as crypto from 'node:crypto';
import * as net from 'node:net';

const [mode, host, portText, bytesText, paceText] = process.argv.slice(2);
const port = Number(portText);

if (mode === 'sink') {
  const server = net.createServer({ allowHalfOpen: true }, (s) => {
    const h = crypto.createHash('sha256');
    let n = 0;
    s.on('error', () => undefined);
    s.on('data', (d) => { h.update(d); n += d.length; });
    s.on('end', () => s.end(`${h.digest('hex')} ${n}`));
  });
  server.listen(port, host, () => process.stdout.write('listening\n'));
  process.on('SIGTERM', () => process.exit(0));
} else if (mode === 'send') {
  const total = Number(bytesText);
  const pace = Number(paceText ?? 0);
  const blocks = [0, 1, 2].map(() => crypto.randomBytes(Math.min(1 << 20, Math.max(total, 1))));
  const h = crypto.createHash('sha256');
  const t0 = Date.now();
  let sent = 0, i = 0, reply = '';
  const s = net.connect({ host, port, allowHalfOpen: true });
  const done = (error?: string) => {
    process.stdout.write(JSON.stringify({ sent: `${h.digest('hex')} ${sent}`, reply, ms: Date.now() - t0, error }) + '\n');
    process.exit(0);
  };
  s.on('error', (e: NodeJS.ErrnoException) => done(e.code ?? e.message));
  s.on('data', (d) => { reply += d; });
  s.on('end', () => { s.end(); done(); });
  const pump = () => {
    while (sent < total) {
      const block = blocks[i++ % blocks.length];
      const b = total - sent >= block.length ? block : block.subarray(0, total - sent);
      h.update(b);
      sent += b.length;
      if (pace > 0) { s.write(b); setTimeout(pump, pace); return; }
      if (!s.write(b)) { s.once('drain', pump); return; }
    }
    s.end();
  };
  s.on('connect', pump);
} else {
  process.stderr.write('usage: tool sink HOST PORT | tool send HOST PORT BYTES [PACE_MS]\n');
  process.exit(2);
}
