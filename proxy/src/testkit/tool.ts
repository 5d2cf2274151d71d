#!/usr/bin/env node
/**
 * Endpoint tool for the network-namespace tests and the benchmark (runs inside `ip netns exec`).
 *   tool sink HOST PORT [log]     hash what arrives; on the client's FIN reply "<sha256> <bytes>" and end;
 *                                 with `log`, print "accepted <from>" and "closed <from> <bytes>" per connection
 *   tool send HOST PORT BYTES [PACE_MS]
 *                                 send BYTES (1 MiB blocks, paced if PACE_MS), half-close, print JSON
 *                                 {sent, reply, ms, error}
 *   tool probe HOST PORT BYTES TIMEOUT_MS [LOCAL_ADDRESS]
 *                                 like send, but bounded: connect (from LOCAL_ADDRESS), send BYTES, half-close,
 *                                 and print {connected, sent, reply, ms, error} at the end, at a reset, or
 *                                 after TIMEOUT_MS (error "timeout"), whichever comes first
 */
import * as crypto from 'node:crypto';
import * as net from 'node:net';

const [mode, host, portText, bytesText, paceText] = process.argv.slice(2);
const port = Number(portText);

if (mode === 'sink') {
  const log = bytesText === 'log';
  const server = net.createServer({ allowHalfOpen: true }, (s) => {
    const h = crypto.createHash('sha256');
    const from = `${s.remoteAddress}:${s.remotePort}`;
    let n = 0;
    if (log) process.stdout.write(`accepted ${from}\n`);
    s.on('error', () => undefined);
    s.on('data', (d) => { h.update(d); n += d.length; });
    s.on('end', () => s.end(`${h.digest('hex')} ${n}`));
    if (log) s.on('close', () => process.stdout.write(`closed ${from} ${n}\n`));
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
} else if (mode === 'probe') {
  const [timeoutText, localAddress] = process.argv.slice(6);
  const payload = crypto.randomBytes(Number(bytesText));
  const t0 = Date.now();
  let connected = false, reply = '';
  const s = net.connect({ host, port, localAddress, allowHalfOpen: true });
  const done = (error?: string) => {
    const sent = `${crypto.createHash('sha256').update(payload).digest('hex')} ${payload.length}`;
    process.stdout.write(JSON.stringify({ connected, sent, reply, ms: Date.now() - t0, error }) + '\n');
    process.exit(0);
  };
  setTimeout(() => done('timeout'), Number(timeoutText));
  s.on('error', (e: NodeJS.ErrnoException) => done(e.code ?? e.message));
  s.on('data', (d) => { reply += d; });
  s.on('end', () => done());
  s.on('connect', () => { connected = true; s.end(payload); });
} else {
  process.stderr.write('usage: tool sink HOST PORT | tool send HOST PORT BYTES [PACE_MS] | tool probe HOST PORT BYTES TIMEOUT_MS [LOCAL_ADDRESS]\n');
  process.exit(2);
}
