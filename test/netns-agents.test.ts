/**
 * What the netns suites read of their agents' stdout (test/support/netns-agents.ts), with the agents run in this
 * network namespace on loopback (a stand-in lab that spawns directly). Two defects of fresh-clone runs:
 *   - a JSON line split over two reads of the pipe was parsed in halves (`JSON.parse` of `{"event":`);
 *   - a server's record of a connection (printed on its socket's 'close') was read right after the client ended,
 *     before the line arrived: fleet-netns saw 1 connection of 2 (2026-12-03);
 *   - a failover's retrying client started a process per try: beside CPU hogs none of 3 tries in 15 s reached the
 *     network (fleet-sites-netns, 2026-12-03). One process, started before the failure, now makes the tries.
 */
import { spawn, type ChildProcess } from 'child_process';
import * as net from 'net';
import { AgentServers, agentCommand, onJsonLines, retryClient } from './support/netns-agents';

const procs: ChildProcess[] = [];
afterAll(() => { for (const p of procs) p.kill('SIGKILL'); });

/** A lab whose "namespaces" are this one: what AgentServers asks of the network-namespace lab. */
const lab = {
  spawn: (_ns: string, cmd: string[]) => { const p = spawn(cmd[0], cmd.slice(1), { stdio: ['ignore', 'pipe', 'pipe'] }); procs.push(p); return p; },
  waitForLine: (p: ChildProcess, re: RegExp, ms: number, what: string) => new Promise<string>((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`${what}: no ${re} in ${ms} ms`)), ms);
    p.stdout!.on('data', (d: string | Buffer) => { if (re.test(String(d))) { clearTimeout(t); resolve(String(d)); } });
  }),
  kill: (p: ChildProcess) => p.kill('SIGKILL'),
} as unknown as ConstructorParameters<typeof AgentServers>[0];

/** A loopback port free a moment ago (the agent takes a port number, not 0). */
const freePort = () => new Promise<number>((resolve) => {
  const s = net.createServer().listen(0, '127.0.0.1', () => { const { port } = s.address() as net.AddressInfo; s.close(() => resolve(port)); });
});

/** Exit code and stdout of one agent run (a client). */
const run = (cmd: string[]) => new Promise<{ code: number | null; out: string }>((resolve) => {
  const p = spawn(cmd[0], cmd.slice(1), { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  p.stdout!.on('data', (d) => { out += d; });
  p.on('exit', (code) => resolve({ code, out }));
});

test('a JSON line written in two pieces, with a pause between them, is read once, whole', async () => {
  const script = 'process.stdout.write(\'{"event":"conn",\'); setTimeout(() => process.stdout.write(\'"bytes":7}\\n{"event":"x"}\\n\'), 200);';
  const p = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  const seen: unknown[] = [];
  onJsonLines(p, (o) => seen.push(o));
  await new Promise((r) => p.on('close', r));
  expect(seen).toEqual([{ event: 'conn', bytes: 7 }, { event: 'x' }]);
});

test('connsAtLeast waits for the server\'s record of each finished connection; it gives up after its bound', async () => {
  const servers = new AgentServers(lab, '127.0.0.1');
  const port = await freePort();
  const server = await servers.start('here', 'echo', port);
  for (let i = 0; i < 3; i++) {
    const r = await run(agentCommand('client', '127.0.0.1', port, 64 * 1024, 5_000));
    expect(r.code).toBe(0);
    expect(JSON.parse(r.out)).toEqual(expect.objectContaining({ ok: true, received: 64 * 1024 }));
  }
  const conns = await servers.connsAtLeast(server, 3);
  expect(conns.map((c) => ({ remote: c.remote, bytes: c.bytes }))).toEqual(Array(3).fill({ remote: '127.0.0.1', bytes: 64 * 1024 }));
  const t0 = Date.now();
  expect(await servers.connsAtLeast(server, 4, 300)).toHaveLength(3);
  expect(Date.now() - t0).toBeGreaterThanOrEqual(300);
}, 30_000);

test('the retrying client, signalled at a failure, tries until a server answers and reports the time from the failure', async () => {
  const port = await freePort();
  const retry = await retryClient(lab, 'here', '127.0.0.1', port, 10_000);
  const since = Date.now();
  const result = retry.go(since);
  await new Promise((r) => setTimeout(r, 700)); // nothing listens yet: refused tries
  const servers = new AgentServers(lab, '127.0.0.1');
  await servers.start('here', 'echo', port);
  const r = await result;
  expect({ ok: r.last?.ok, error: r.last?.error, received: r.last?.received }).toEqual({ ok: true, error: undefined, received: 64 * 1024 });
  expect(r.tries).toBeGreaterThanOrEqual(2);
  expect(r.ms).toBeGreaterThanOrEqual(700);
}, 30_000);

test('past its deadline the retrying client reports the last try\'s error and no time', async () => {
  const port = await freePort();
  const retry = await retryClient(lab, 'here', '127.0.0.1', port, 800);
  const r = await retry.go(Date.now());
  expect({ ms: r.ms, ok: r.last?.ok, error: r.last?.error }).toEqual({ ms: undefined, ok: false, error: 'ECONNREFUSED' });
  expect(r.tries).toBeGreaterThanOrEqual(2);
}, 30_000);
