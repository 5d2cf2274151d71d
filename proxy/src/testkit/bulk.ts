#!/usr/bin/env node
/**
 * Bulk streams and a meter for the bandwidth budget test (runs inside `ip netns exec`).
 *   bulk meter PORT SECONDS [STREAMS]
 *                             count the bytes of each connection (named by its first line) at the receiver; every
 *                             50 ms note [Date.now(), bytes] per name; print "listening", and once STREAMS connections
 *                             have ended (each sender's last byte counted), at the latest after SECONDS, the JSON
 *                             {name: [[ms, bytes], ...]} (then exit). Not a fixed time: a sender that started late on a
 *                             loaded machine still has its queued bytes counted.
 *   bulk blast JSON           JSON: [{host, port, name, delayMs, durMs}]: each stream waits delayMs, connects, sends
 *                             "name\n" and then as fast as the path takes it until durMs after its start, then
 *                             closes; print {name: error|null} when all are done
 */
import * as net from 'node:net';

const [mode, a, b, c] = process.argv.slice(2);

if (mode === 'meter') {
  const bytes = new Map<string, number>();
  const samples: Record<string, [number, number][]> = {};
  const want = c === undefined ? Infinity : Number(c);
  let ended = 0;
  const report = () => { clearInterval(tick); process.stdout.write(`${JSON.stringify(samples)}\n`, () => process.exit(0)); };
  const server = net.createServer((s) => {
    let name: string | undefined, head = '';
    s.on('error', () => undefined);
    s.on('close', () => {
      if (name !== undefined) samples[name].push([Date.now(), bytes.get(name) ?? 0]);
      if (++ended >= want) report();
    });
    s.on('data', (d: Buffer) => {
      if (name === undefined) {
        head += d.toString('latin1');
        const nl = head.indexOf('\n');
        if (nl < 0) return;
        name = head.slice(0, nl);
        bytes.set(name, head.length - nl - 1);
        samples[name] = [];
        return;
      }
      bytes.set(name, (bytes.get(name) ?? 0) + d.length);
    });
  });
  const tick = setInterval(() => { const now = Date.now(); for (const [n, v] of bytes) samples[n].push([now, v]); }, 50);
  server.listen(Number(a), '::', () => process.stdout.write('listening\n'));
  setTimeout(report, Number(b) * 1000);
} else if (mode === 'blast') {
  const specs = JSON.parse(a) as { host: string; port: number; name: string; delayMs: number; durMs: number }[];
  const chunk = Buffer.alloc(256 * 1024);
  const result: Record<string, string | null> = {};
  const one = (sp: typeof specs[number]) => new Promise<void>((resolve) => {
    setTimeout(() => {
      const s = net.connect(sp.port, sp.host);
      const end = Date.now() + sp.durMs;
      let done = false;
      const finish = (err: string | null) => { if (done) return; done = true; result[sp.name] = err; s.destroy(); resolve(); };
      const pump = () => {
        while (Date.now() < end) { if (!s.write(chunk)) { s.once('drain', pump); return; } }
        finish(null);
      };
      s.on('connect', () => { s.write(`${sp.name}\n`); pump(); });
      s.on('error', (e) => finish(e.message));
      setTimeout(() => finish(null), sp.durMs + 2000).unref(); // bounded even when the path stalls
    }, sp.delayMs);
  });
  void Promise.all(specs.map(one)).then(() => process.stdout.write(`${JSON.stringify(result)}\n`, () => process.exit(0)));
} else {
  process.stderr.write('usage: bulk meter PORT SECONDS | bulk blast JSON\n');
  process.exit(2);
}
