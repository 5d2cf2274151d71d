import { FleetProblem, FleetValidationError } from '../../src/base/errors';
import { FleetDocument } from '../../src/fleet/schema';
import { planFleet } from '../../src/addressing/planner';
import { resolveFleet } from '../../src/fleet/resolve';
import { parseFleetDocument } from '../../src/fleet/load';
import { main } from '../../cli/cli';
import { synthesizeFleet } from '../../cli/synthesize-fleet';

/** A small valid gateway-mode fleet; tests override parts of it. */
/** The CLI in process: exit code and everything it wrote to stdout and stderr. */
export function runCli(argv: string[]): { code: number; out: string; err: string } {
  let out = '';
  let err = '';
  const code = main(argv, (x) => { out += x; }, (x) => { err += x; });
  return { code, out, err };
}

export function baseFleet(overrides: Partial<FleetDocument['spec']> = {}, name = 'test'): FleetDocument {
  return {
    apiVersion: 'migrationmesh.dev/v1alpha1',
    kind: 'Fleet',
    metadata: { name },
    spec: {
      crossClusterNetwork: {
        attachment: { type: 'macvlan', master: 'eth2' },
        addresses: { pool: ['192.168.50.0/24'], prefixLength: 24 },
      },
      migrationNetwork: { attachment: { type: 'bridge', bridge: 'br-mig', vlan: 100 }, supernet: '10.200.0.0/16' },
      clusters: [{ name: 'a', nodes: 3 }, { name: 'b', nodes: 3 }],
      ...overrides,
    },
  };
}

/** Clone with a mutation applied to the raw document (for invalid inputs zod would refuse to type). */
export function mutate(doc: FleetDocument, fn: (d: any) => void): any {
  const d = JSON.parse(JSON.stringify(doc));
  fn(d);
  return d;
}

/** Run validation + planning on a fleet document; return every problem (empty when valid). */
export function problemsOf(doc: unknown): FleetProblem[] {
  try {
    planFleet(resolveFleet(parseFleetDocument(doc)));
    return [];
  } catch (e) {
    if (e instanceof FleetValidationError) return [...e.problems];
    throw e;
  }
}

/** Validation, planning and the whole synthesis in memory (no YAML): every problem (empty when valid). Moves are judged here. */
export function synthProblemsOf(doc: unknown): FleetProblem[] {
  try {
    synthesizeFleet(doc as FleetDocument, { render: false });
    return [];
  } catch (e) {
    if (e instanceof FleetValidationError) return [...e.problems];
    throw e;
  }
}

/** Clusters a, b, c (3 nodes each); Forklift's hub on a, providers for b and c, one storage mapping, these moves. */
export function movesFleet(moves: unknown[], edit: (d: any) => void = () => undefined): FleetDocument {
  return mutate(baseFleet({ clusters: [{ name: 'a', nodes: 3 }, { name: 'b', nodes: 3 }, { name: 'c', nodes: 3 }] }), (d) => {
    edit(d);
    d.spec.forklift = {
      hub: { cluster: 'a', namespace: 'openshift-mtv' },
      providers: { b: { url: 'https://api.b.example:6443', secret: 'b-provider' }, c: { url: 'https://api.c.example:6443', secret: 'c-provider' } },
      storage: [{ source: 'ceph-rbd', storageClass: 'ceph-rbd' }],
      moves,
    };
  });
}
