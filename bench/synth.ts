/**
 * Synthesis benchmark: wall time and peak memory to validate, plan and synthesize fleets of 10, 100
 * and 1000 clusters (gateway mode, 10 nodes each), each size in a fresh child process so the peak RSS
 * is that run's own. Baseline in the same run: plain cdk8s synthesizing the same objects (precomputed,
 * no validation or planning): what a user writing the YAML with cdk8s by hand would pay.
 *
 *   npm run bench            (prints a table; writes bench/results/synth.json)
 */
import { execFileSync } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';

export function fleetOfSize(n: number): any {
  return {
    apiVersion: 'migrationmesh.dev/v1alpha1', kind: 'Fleet', metadata: { name: `bench${n}` },
    spec: {
      crossClusterNetwork: { attachment: { type: 'macvlan', master: 'eth2' }, addresses: { pool: ['172.16.0.0/20'], prefixLength: 20 } },
      migrationNetwork: { attachment: { type: 'bridge', bridge: 'br-mig', vlan: 100 }, supernet: '10.0.0.0/10' },
      clusters: Array.from({ length: n }, (_, i) => ({ name: `c${String(i).padStart(4, '0')}`, nodes: 10 })),
    },
  };
}

interface Row { clusters: number; tool: string; ms: number; peakMiB: number; files: number; outMiB: number }

function child(mode: 'ours' | 'baseline', n: number, objectsFile = ''): Row {
  const out = execFileSync(process.execPath, ['--max-old-space-size=8192', __filename, '--child', mode, String(n), objectsFile], { encoding: 'utf8', maxBuffer: 1 << 24, timeout: 600_000 });
  return JSON.parse(out.trim().split('\n').pop()!);
}

function runChild(mode: string, n: number): void {
  const { synthesizeFleetToDirectory } = require('../cli/fleet-directory');
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'mm-bench-'));
  const doc = fleetOfSize(n);
  let files: Map<string, string>;
  let ms: number;
  if (mode === 'ours') {
    const t0 = process.hrtime.bigint();
    // the writer the CLI uses: render, then the transaction (manifest, temp files, one flush, renames)
    files = synthesizeFleetToDirectory({ fleet: doc, outdir: path.join(tmp, 'out'), svg: false }).files;
    ms = Number(process.hrtime.bigint() - t0) / 1e6;
  } else {
    // the same objects, precomputed by the parent and read outside the timed section; then time plain cdk8s
    const objects = new Map<string, any[]>(JSON.parse(fs.readFileSync(process.argv[5], 'utf8')));
    const { App, Chart, ApiObject, YamlOutputType } = require('cdk8s');
    const t0 = process.hrtime.bigint();
    const app = new App({ outdir: path.join(tmp, 'out'), yamlOutputType: YamlOutputType.FOLDER_PER_CHART_FILE_PER_RESOURCE });
    for (const [cluster, objs] of objects) {
      const chart = new Chart(app, cluster, { disableResourceNameHashes: true });
      objs.forEach((o: any, i: number) => new ApiObject(chart, `o${i}`, o));
    }
    app.synth();
    ms = Number(process.hrtime.bigint() - t0) / 1e6;
    files = new Map();
    const walk = (d: string): void => { for (const e of fs.readdirSync(d, { withFileTypes: true })) { if (e.isDirectory()) walk(path.join(d, e.name)); else files.set(e.name, fs.readFileSync(path.join(d, e.name), 'utf8')); } };
    walk(path.join(tmp, 'out'));
  }
  let bytes = 0;
  for (const v of files.values()) bytes += Buffer.byteLength(v);
  fs.rmSync(tmp, { recursive: true, force: true });
  const row: Row = { clusters: n, tool: mode === 'ours' ? 'migration-mesh synth' : 'plain cdk8s (same objects)', ms, peakMiB: process.resourceUsage().maxRSS / 1024, files: files.size, outMiB: bytes / 1048576 };
  console.log(JSON.stringify(row));
}

function main(): void {
  const sizes = (process.env.BENCH_SIZES ?? '10,100,1000').split(',').map(Number);
  const rows: { ours: Row; base: Row }[] = [];
  for (const n of sizes) {
    const ours = child('ours', n);
    const objectsFile = path.join(os.tmpdir(), `mm-bench-objects-${process.pid}.json`);
    const { synthesizeFleet } = require('../cli/synthesize-fleet');
    fs.writeFileSync(objectsFile, JSON.stringify([...synthesizeFleet(fleetOfSize(n)).objects.entries()]));
    const base = child('baseline', n, objectsFile);
    fs.rmSync(objectsFile, { force: true });
    rows.push({ ours, base });
    process.stderr.write(`  ${n} clusters done\n`);
  }
  const pad = (s: string, w: number): string => s.padStart(w);
  const lines = [
    `| clusters | files | output MiB | migration-mesh ms | peak MiB | plain cdk8s ms | peak MiB | time ratio (ours/cdk8s) |`,
    `|---:|---:|---:|---:|---:|---:|---:|---:|`,
    ...rows.map(({ ours, base }) => `| ${pad(String(ours.clusters), 5)} | ${ours.files} | ${ours.outMiB.toFixed(1)} | ${ours.ms.toFixed(0)} | ${ours.peakMiB.toFixed(0)} | ${base.ms.toFixed(0)} | ${base.peakMiB.toFixed(0)} | ${(ours.ms / base.ms).toFixed(2)} |`),
  ];
  console.log(`Synthesis benchmark (node ${process.version}, ${os.cpus().length} cores; gateway mode, 10 nodes/cluster)`);
  console.log(lines.join('\n'));
  const resDir = path.join(__dirname, '..', '..', 'bench', 'results');
  fs.mkdirSync(resDir, { recursive: true });
  fs.writeFileSync(path.join(resDir, 'synth.json'), `${JSON.stringify(rows, null, 2)}\n`);
}

if (require.main === module) {
  if (process.argv[2] === '--child') runChild(process.argv[3], Number(process.argv[4]));
  else main();
}
