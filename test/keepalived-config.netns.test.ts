/**
 * Every keepalived.conf we emit passes keepalived's own config check (`keepalived -t`), for every
 * replica's view of it (`--config-id replica-N`), IPv4 and IPv6 examples alike: the schema test for
 * the one output that has no schema. Run inside a namespace of its own holding the interface the file
 * names (keepalived refuses a config whose interface does not exist).
 *
 * One substitution, on purpose: keepalived 2.2.7's config test kills itself with SIGTERM, silently,
 * whenever `script_user` is not root (after checking the script as that user it sees a parent other
 * than its own main process; seen with strace: setresuid(-1, 65534) ... kill(self, SIGTERM)). A normal
 * run is fine with it, which the fleet netns test proves (the check runs as nobody and fails over).
 * So the check here reads `script_user root`, and a separate assertion pins the emitted `nobody`.
 *
 * Needs root, iproute2 and keepalived (scripts/ensure-system-deps.js installs it); skips with a message
 * otherwise.
 */
import { spawnSync } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { loadFleetFile, loadLedgerFile, ledgerPathFor } from '../src/fleet/load';
import { synthesizeFleet } from '../cli/synthesize-fleet';
import { hasCommand, netnsSupport } from './support/netns';

const EX = path.join(__dirname, '..', 'examples');
const support = netnsSupport();
const skipReason = !support.ok ? support.reason : !hasCommand('keepalived') ? 'keepalived missing (run node scripts/ensure-system-deps.js as root)' : undefined;
if (skipReason) console.warn(`[keepalived-config] SKIPPED: ${skipReason}`);
const d = skipReason ? describe.skip : describe;

interface Emitted { fleet: string; cluster: string; conf: string; replicas: number; ifname: string }

function emitted(): Emitted[] {
  const out: Emitted[] = [];
  for (const f of fs.readdirSync(EX).filter((x) => x.endsWith('.fleet.yaml')).sort()) {
    const file = path.join(EX, f);
    const r = synthesizeFleet(loadFleetFile(file), { ledger: loadLedgerFile(ledgerPathFor(file)) });
    for (const c of r.plan.clusters) {
      const objs = r.objects.get(c.name) ?? [];
      const cm = objs.find((o: any) => o.kind === 'ConfigMap' && o.data?.['keepalived.conf']) as any;
      if (!cm) continue;
      const dep = objs.find((o: any) => o.kind === 'Deployment') as any;
      const ifname = JSON.parse(dep.spec.template.metadata.annotations['k8s.v1.cni.cncf.io/networks'])[0].interface;
      out.push({ fleet: r.plan.fleet, cluster: c.name, conf: cm.data['keepalived.conf'], replicas: c.gateways.length, ifname });
    }
  }
  return out;
}

d('keepalived.conf passes keepalived -t', () => {
  const ns = `mmka${process.pid}`;
  let dir = '';
  const all = skipReason ? [] : emitted();

  beforeAll(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mm-ka-'));
    spawnSync('ip', ['netns', 'add', ns]);
  });
  afterAll(() => {
    spawnSync('ip', ['netns', 'del', ns]);
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  test('the examples emit keepalived.conf for their 2-replica gateway clusters, IPv6 included', () => {
    expect(all.length).toBeGreaterThanOrEqual(10);
    expect(all.some((e) => e.conf.includes('::'))).toBe(true);
  });

  test('every replica\'s view of every file is accepted; a broken file is not (the check can fail)', () => {
    const ifnames = [...new Set(all.map((e) => e.ifname))];
    for (const [i, n] of ifnames.entries()) {
      const r = spawnSync('ip', ['-n', ns, 'link', 'add', n, 'type', 'veth', 'peer', 'name', `kap${i}`], { encoding: 'utf8' });
      expect(r.stderr).toBe('');
    }
    const check = (file: string, replica: number) =>
      spawnSync('ip', ['netns', 'exec', ns, 'keepalived', '-t', '-f', file, '-i', `replica-${replica}`], { encoding: 'utf8', timeout: 10_000 });
    for (const e of all) {
      const file = path.join(dir, `${e.fleet}-${e.cluster}.conf`);
      expect(e.conf).toContain('\n  script_user nobody\n');
      fs.writeFileSync(file, e.conf.replace('\n  script_user nobody\n', '\n  script_user root\n'));
      for (let i = 0; i < e.replicas; i++) {
        const r = check(file, i);
        expect({ file: `${e.fleet}/${e.cluster}`, replica: i, status: r.status, stderr: r.stderr, error: r.error?.message, signal: r.signal ?? undefined })
          .toEqual({ file: `${e.fleet}/${e.cluster}`, replica: i, status: 0, stderr: '' });
      }
    }
    const broken = path.join(dir, 'broken.conf');
    fs.writeFileSync(broken, all[0].conf.replace('\n  script_user nobody\n', '\n  script_user root\n').replace('  nopreempt\n', '  nopreempt\n  no_such_keyword 1\n'));
    const bad = check(broken, 0);
    expect(bad.status).not.toBe(0);
    expect(bad.stderr).toMatch(/Unknown keyword 'no_such_keyword'/);
  });

  test('each replica\'s view names itself as source and the others as peers', () => {
    for (const e of all) {
      const srcs = [...e.conf.matchAll(/@replica-(\d+) unicast_src_ip (\S+)/g)].map((m) => [Number(m[1]), m[2]] as const);
      const peers = [...e.conf.matchAll(/@\^replica-(\d+) (\S+)/g)].map((m) => [Number(m[1]), m[2]] as const);
      expect(srcs).toHaveLength(e.replicas);
      expect(peers).toEqual(srcs);
    }
  });
});

