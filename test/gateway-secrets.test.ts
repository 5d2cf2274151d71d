/**
 * Secrets only where needed (issue 49 item 3): per container of every gateway and trust agent pod, exactly
 * which Secret keys, ConfigMap keys and service-account token it can read (through any volume it mounts,
 * or env). The TLS key (and its certificate) reach the network-facing runtime alone: not keepalived (which
 * parses VRRP from the network), not setup-rules, not the trust container (which holds the API token).
 */
import { synthesizeFleet } from '../cli/synthesize-fleet';
import { baseFleet } from './support/fleets';

interface Readable { secrets: string[]; configMaps: string[]; token: boolean }

/** What one container of a pod spec can read: `secret/key` and `configmap/key` names, and the token. */
function readableBy(pod: any, c: any): Readable {
  const secrets = new Set<string>();
  const configMaps = new Set<string>();
  let token = false;
  const addSecret = (s: any) => (s.items ?? [{ key: '*' }]).forEach((i: any) => secrets.add(`${s.secretName ?? s.name}/${i.key}`));
  const addCm = (s: any) => (s.items ?? [{ key: '*' }]).forEach((i: any) => configMaps.add(`${s.name}/${i.key}`));
  for (const m of c.volumeMounts ?? []) {
    const v = pod.volumes.find((x: any) => x.name === m.name);
    if (v.secret) addSecret(v.secret);
    if (v.configMap) addCm(v.configMap);
    for (const src of v.projected?.sources ?? []) {
      if (src.secret) addSecret(src.secret);
      if (src.configMap) addCm(src.configMap);
      if (src.serviceAccountToken) token = true;
    }
  }
  for (const e of c.env ?? []) if (e.valueFrom?.secretKeyRef) secrets.add(`${e.valueFrom.secretKeyRef.name}/${e.valueFrom.secretKeyRef.key}`);
  for (const e of c.envFrom ?? []) if (e.secretRef) secrets.add(`${e.secretRef.name}/*`);
  return { secrets: [...secrets].sort(), configMaps: [...configMaps].sort(), token };
}

const byContainer = (d: any): Record<string, Readable> => {
  const pod = d.spec.template.spec;
  return Object.fromEntries([...(pod.initContainers ?? []), ...pod.containers].map((c: any) => [c.name, readableBy(pod, c)]));
};

const TLS = ['migration-mesh-gateway-tls/ca.crt', 'migration-mesh-gateway-tls/tls.crt', 'migration-mesh-gateway-tls/tls.key'];
const CONFIG = ['migration-mesh-gateway/config.json'];

describe('each gateway container reads only what it needs', () => {
  test('gateway pod with failover and the trust exchange: the key is in the runtime alone', () => {
    const r = synthesizeFleet(baseFleet({ gateway: { replicas: 2 } }));
    for (const cluster of ['a', 'b']) {
      const deps = r.objects.get(cluster)!.filter((o: any) => o.kind === 'Deployment' && o.metadata.name.startsWith('migration-mesh-gateway-'));
      expect(deps).toHaveLength(2);
      for (const d of deps) {
        const got = byContainer(d);
        expect(Object.keys(got).sort()).toEqual(['failover', 'gateway', 'setup-rules', 'trust']);
        expect(got.gateway).toEqual({ secrets: TLS, configMaps: CONFIG, token: false });
        expect(got['setup-rules']).toEqual({ secrets: [], configMaps: CONFIG, token: false });
        expect(got.failover).toEqual({ secrets: [], configMaps: ['migration-mesh-gateway/keepalived.conf'], token: false });
        expect(got.trust).toEqual({ secrets: [], configMaps: [...CONFIG, 'kube-root-ca.crt/ca.crt'].sort(), token: true });
      }
    }
  });

  test('a user Secret source and a cluster without a gateway (trust agent): the same split', () => {
    const r = synthesizeFleet(baseFleet({
      gateway: { replicas: 1, tls: { secretName: 'gw-certs' } },
      clusters: [{ name: 'a', nodes: 3 }, { name: 'd', nodes: 2, datapath: 'direct' }],
    }));
    const gw = r.objects.get('a')!.find((o: any) => o.kind === 'Deployment' && o.metadata.name === 'migration-mesh-gateway-0');
    const userTls = ['gw-certs/ca.crt', 'gw-certs/tls.crt', 'gw-certs/tls.key'];
    expect(byContainer(gw).gateway.secrets).toEqual(userTls);
    for (const name of ['setup-rules', 'trust']) expect(byContainer(gw)[name].secrets).toEqual([]);
    const agents = r.objects.get('d')!.filter((o: any) => o.kind === 'Deployment' && o.metadata.name.startsWith('migration-mesh-trust-'));
    expect(agents.length).toBeGreaterThan(0);
    for (const d of agents) {
      const got = byContainer(d);
      expect(Object.keys(got).sort()).toEqual(['runtime', 'trust']);
      expect(got.runtime).toEqual({ secrets: userTls, configMaps: [expect.stringMatching(/\/config\.json$/)], token: false });
      expect(got.trust.secrets).toEqual([]);
      expect(got.trust.token).toBe(true);
    }
  });
});
