/** The built CLI's `status FLEET --moves --output json` (lib/cli/cli.js), as a real-parts test runs it: exit status, JSON, stderr. */
import { spawn } from 'node:child_process';
import * as path from 'node:path';
import { FleetDocument } from '../../src/fleet/schema';
import { baseFleet } from './fleets';

const CLI = path.resolve(__dirname, '..', '..', 'lib', 'cli', 'cli.js');

export function statusMoves(fleetFile: string, out: string, kubeconfig: string): Promise<{ code: number; json: any; err: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [CLI, 'status', fleetFile, '--out', out, '--kubeconfig', kubeconfig,
      '--moves', '--output', 'json', '--timeout', '60'], { env: { ...process.env, CI: '1' } });
    let stdout = '';
    let err = '';
    child.stdout.on('data', (x) => { stdout += x; });
    child.stderr.on('data', (x) => { err += x; });
    child.on('close', (code) => { let json: any; try { json = JSON.parse(stdout); } catch { json = { raw: stdout }; } resolve({ code: code ?? -1, json, err }); });
  });
}

/** The two-cluster fleet the readiness tests move `vms` (namespace vms) from q to p in, with the status ClusterRole. */
export function readinessFleet(vms: readonly string[], name: string): FleetDocument {
  return baseFleet({
    clusters: [{ name: 'p', nodes: 3 }, { name: 'q', nodes: 3 }],
    operatorView: { statusClusterRole: true },
    forklift: {
      hub: { cluster: 'p', namespace: 'mtv' },
      providers: { q: { url: 'https://api.q.example:6443', secret: 'q-provider' } },
      storage: [{ source: 'ceph-rbd', storageClass: 'ceph-rbd' }],
      moves: vms.map((v) => ({ vm: v, namespace: 'vms', from: 'q', to: 'p', batch: 'w1' })),
    },
  } as any, name);
}
