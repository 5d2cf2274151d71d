/**
 * Issue #30's "done when": every cluster of every committed multi-cluster example runs the CA exchange,
 * whatever its datapath (gateways, or a trust agent for direct, native and Harvester clusters). Read from
 * the committed dist/ (test/cli-process.lib.test.ts checks it is what synth writes), so it costs no synthesis.
 * Per cluster: a runtime config with a trust socket listing every other cluster of the fleet as a peer, at
 * addresses that cluster's own config says it holds; a trust container beside the runtime in
 * every pod of that config, pointed at the KubeVirt namespace; and there a Role limited by `resourceNames`
 * to `kubevirt-ca` (read) and `kubevirt-external-ca` (read, update), bound to the pods' ServiceAccount.
 */
import * as fs from 'fs';
import * as path from 'path';
import * as YAML from 'yaml';

const DIST = path.join(__dirname, '..', 'dist');

/** The cluster's objects, also from the GitOps layout's wave folders (10-gateway, ...); not from kustomize components (patches). */
function objectsOf(dir: string): any[] {
  return fs.readdirSync(dir).flatMap((f) => {
    const p = path.join(dir, f);
    if (fs.statSync(p).isDirectory()) return f === 'components' ? [] : objectsOf(p);
    if (!f.endsWith('.yaml') || f === 'kustomization.yaml') return [];
    return YAML.parseAllDocuments(fs.readFileSync(p, 'utf8')).map((d) => d.toJS()).filter((o) => o && o.kind);
  });
}

const fleets = fs.readdirSync(DIST).filter((f) => fs.statSync(path.join(DIST, f)).isDirectory()).map((fleet) => ({
  fleet,
  // directories named _... are not clusters (the GitOps hub's Applications, Forklift plans)
  clusters: fs.readdirSync(path.join(DIST, fleet)).filter((c) => !c.startsWith('_') && fs.statSync(path.join(DIST, fleet, c)).isDirectory()),
})).filter((f) => f.clusters.length >= 2);

interface ClusterTrust { config: any; objs: any[] }

describe('every cluster of every committed multi-cluster example runs the CA exchange (dist/)', () => {
  test('the examples cover several fleets and datapaths', () => {
    expect(fleets.length).toBeGreaterThanOrEqual(5);
    // trust agents (non-gateway clusters) and gateways both appear
    const deployments = fleets.flatMap((f) => f.clusters.flatMap((c) => objectsOf(path.join(DIST, f.fleet, c)).filter((o) => o.kind === 'Deployment').map((o) => o.metadata.name)));
    expect(deployments.some((n) => n.startsWith('migration-mesh-trust-'))).toBe(true);
    expect(deployments.some((n) => n.startsWith('migration-mesh-gateway-'))).toBe(true);
  });

  for (const { fleet, clusters } of fleets) {
    test(`${fleet}: ${clusters.join(', ')}`, () => {
      const byCluster = new Map<string, ClusterTrust>();
      for (const c of clusters) {
        const objs = objectsOf(path.join(DIST, fleet, c));
        const cms = objs.filter((o) => o.kind === 'ConfigMap' && o.data?.['config.json']);
        expect(cms.map((o) => `${c}/${o.metadata.name}`)).toHaveLength(1);
        byCluster.set(c, { config: JSON.parse(cms[0].data['config.json']), objs });
      }
      for (const [c, { config, objs }] of byCluster) {
        expect(config.cluster).toBe(c);
        expect(config.trust?.socket).toBeTruthy();
        // every other cluster is a peer, at the addresses it holds itself
        expect(config.peers.map((p: any) => p.cluster).sort()).toEqual(clusters.filter((x) => x !== c).sort());
        for (const p of config.peers) {
          const hosts = p.gateways.map((g: any) => g.host).sort();
          expect(hosts.length).toBeGreaterThan(0);
          expect(byCluster.get(p.cluster)!.config.ownAddresses).toEqual(expect.arrayContaining(hosts));
        }
        // a trust container in every pod running this config
        const pods = objs.filter((o) => o.kind === 'Deployment').map((o) => o.spec.template.spec);
        expect(pods.length).toBeGreaterThan(0);
        const namespaces = new Set<string>();
        for (const pod of pods) {
          const trust = pod.containers.find((k: any) => k.name === 'trust');
          expect(trust?.args?.[0]).toBe('trust');
          namespaces.add(trust.args[trust.args.indexOf('--namespace') + 1]);
        }
        expect(namespaces.size).toBe(1);
        const [kvNs] = [...namespaces];
        // the Role: only KubeVirt's two CA ConfigMaps, in KubeVirt's namespace, bound to the pods' ServiceAccount
        const role = objs.find((o) => o.kind === 'Role' && o.metadata.namespace === kvNs && o.rules.some((r: any) => r.resourceNames?.includes('kubevirt-external-ca')));
        expect(role).toBeDefined();
        expect(role.rules.map((r: any) => [r.resourceNames, r.verbs])).toEqual([[['kubevirt-ca'], ['get', 'list', 'watch']], [['kubevirt-external-ca'], ['get', 'update']]]);
        const binding = objs.find((o) => o.kind === 'RoleBinding' && o.roleRef.name === role.metadata.name && o.metadata.namespace === kvNs);
        expect(binding.subjects.map((s: any) => s.name)).toEqual([...new Set(pods.map((p) => p.serviceAccountName))]);
      }
    });
  }
});
