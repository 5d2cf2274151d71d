/**
 * MigrationProxy, complete: what the generated gateway objects mean (addresses, attachments, privileges,
 * placement, identity, policy), asserted on the synthesized objects of real fleets.
 */
import * as path from 'path';
import { Size, Testing } from 'cdk8s';
import { testApp, testChart } from './support/tmp';
import * as kplus from 'cdk8s-plus-28';
import { parseProxyConfig } from '@migration-mesh/proxy/config';
import { CrossClusterMigrationMesh } from '../constructs/fleet/mesh';
import { MigrationProxy } from '../constructs/gateway/migration-proxy';
import { GatewayCrossClusterPolicy } from '../constructs/gateway/policy';
import { GatewayTls } from '../constructs/gateway/tls';
import { loadFleetFile, loadLedgerFile, ledgerPathFor } from '../src/fleet/load';
import { synthesizeFleet } from '../cli/synthesize-fleet';
import { gatewayNetworkSelection, gatewayRestartHash, GATEWAY_RESTART_HASH_ANNOTATION } from '../src/gateway/pod';
import { baseFleet } from './support/fleets';

const example = path.join(__dirname, '..', 'examples', 'three-sites-vlan.fleet.yaml');
const sites = () => synthesizeFleet(loadFleetFile(example), { ledger: loadLedgerFile(ledgerPathFor(example)) });

const of = (objs: any[], kind: string) => objs.filter((o) => o.kind === kind);
const one = (objs: any[], kind: string, name?: string) => {
  const hits = objs.filter((o) => o.kind === kind && (name === undefined || o.metadata.name === name));
  expect(hits).toHaveLength(1);
  return hits[0];
};
const selection = (d: any) => JSON.parse(d.spec.template.metadata.annotations['k8s.v1.cni.cncf.io/networks']);

describe('gateway Deployments (three-sites-vlan example)', () => {
  const r = sites();

  test.each(['ams-1', 'fra-1', 'par-1'])('%s: one Deployment per planned replica, each with its own planned addresses', (name) => {
    const cluster = r.plan.clusters.find((c) => c.name === name)!;
    const deps = of(r.objects.get(name)!, 'Deployment');
    expect(deps.map((d) => d.metadata.name)).toEqual(cluster.gateways.map((g) => `migration-mesh-gateway-${g.replica}`));
    for (const [i, d] of deps.entries()) {
      const g = cluster.gateways[i];
      expect(d.spec.replicas).toBe(1);
      expect(d.spec.strategy).toEqual({ type: 'Recreate' });
      // Multus reads pod annotations only: the selection is on the template, not on the Deployment
      expect(d.metadata.annotations?.['k8s.v1.cni.cncf.io/networks']).toBeUndefined();
      expect(selection(d)).toEqual([
        { name: 'lm-migration-gateway', namespace: 'migration-mesh', interface: 'mig0', ips: [g.inCluster] },
        { name: 'lm-crosscluster', namespace: 'migration-mesh', interface: 'xc0', ips: [g.crossCluster] },
      ]);
      // the selector is per replica (a Deployment never adopts another replica's pod)
      expect(d.spec.selector.matchLabels['migrationmesh.dev/gateway-replica']).toBe(String(g.replica));
      for (const [k, v] of Object.entries(d.spec.selector.matchLabels)) expect(d.spec.template.metadata.labels[k]).toBe(v);
    }
  });

  test('the selection names NADs that exist, in the pod namespace, with per-pod ips enabled', () => {
    const objs = r.objects.get('fra-1')!;
    const nads = of(objs, 'NetworkAttachmentDefinition');
    for (const el of selection(one(objs, 'Deployment', 'migration-mesh-gateway-0'))) {
      const nad = nads.find((n) => n.metadata.name === el.name && n.metadata.namespace === el.namespace);
      expect(nad).toBeDefined();
      const cfg = JSON.parse(nad.spec.config);
      expect(cfg.capabilities).toEqual({ ips: true });
      expect(cfg.ipam.type).toBe('static');
      expect(el.interface.length).toBeLessThanOrEqual(15);
    }
  });

  test('all gateway addresses are distinct across the fleet, and each in-cluster one is excluded from whereabouts', () => {
    const cross: string[] = [];
    for (const [name, objs] of r.objects) {
      const migNad = of(objs, 'NetworkAttachmentDefinition').find((n) => n.metadata.namespace === 'kubevirt');
      const excl: string[] = JSON.parse(migNad.spec.config).ipam.exclude;
      for (const d of of(objs, 'Deployment')) {
        const [inC, xc] = selection(d);
        expect(excl).toContain(`${inC.ips[0].split('/')[0]}/32`);
        cross.push(xc.ips[0]);
      }
      expect(name).toBeTruthy();
    }
    expect(new Set(cross).size).toBe(cross.length);
    expect(cross).toHaveLength(6);
  });

  test('privileges: only the rule-setup init container has NET_ADMIN (and root) among the setup steps; the runtime is non-root, read-only, no capabilities; the failover sidecar has NET_ADMIN, NET_RAW, SETUID, SETGID only', () => {
    const d = one(r.objects.get('par-1')!, 'Deployment', 'migration-mesh-gateway-1');
    const pod = d.spec.template.spec;
    expect(pod.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: 65532, runAsGroup: 65532, seccompProfile: { type: 'RuntimeDefault' } });
    // cdk8s-plus-28 writes the default explicitly; the pod must never share the host's network namespace
    expect(pod.hostNetwork).toBe(false);
    expect(pod.automountServiceAccountToken).toBe(false);
    const [init] = pod.initContainers;
    expect(pod.initContainers).toHaveLength(1);
    expect(init.args).toEqual(['setup-rules', '--config', '/etc/migration-mesh/config.json']);
    expect(init.securityContext.capabilities).toEqual({ add: ['NET_ADMIN'], drop: ['ALL'] });
    expect(init.securityContext.privileged).toBe(false);
    expect(init.securityContext.allowPrivilegeEscalation).toBe(false);
    const [main, failover, trust] = pod.containers;
    // trust is on by default (gateway clusters, migration TLS on): its container holds the pod's only token and no capabilities
    expect(pod.containers.map((c: any) => c.name)).toEqual(['gateway', 'failover', 'trust']);
    expect(trust.securityContext).toEqual({
      runAsNonRoot: true, allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, privileged: false, capabilities: { drop: ['ALL'] },
    });
    expect(failover.command).toEqual(['keepalived']);
    expect(failover.args).toEqual(['--dont-fork', '--log-console', '--no-syslog', '--vrrp', '--use-file', '/etc/migration-mesh/keepalived.conf',
      '--config-id', 'replica-1', '--pid', '/run/keepalived/keepalived.pid', '--vrrp_pid', '/run/keepalived/vrrp.pid']);
    expect(failover.securityContext).toEqual({
      runAsUser: 0, runAsGroup: 0, runAsNonRoot: false, privileged: false, allowPrivilegeEscalation: false, readOnlyRootFilesystem: true,
      capabilities: { add: ['NET_ADMIN', 'NET_RAW', 'SETUID', 'SETGID'], drop: ['ALL'] },
    });
    expect(main.args).toEqual(['run', '--config', '/etc/migration-mesh/config.json']);
    expect(main.securityContext).toEqual({
      runAsNonRoot: true, allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, privileged: false, capabilities: { drop: ['ALL'] },
    });
    expect(main.resources.requests).toBeDefined();
    expect(main.resources.limits.memory).toBeDefined();
    expect(main.resources.limits.cpu).toBeUndefined();
  });

  test('probes hit the runtime admin port; ports match the runtime config', () => {
    const objs = r.objects.get('ams-1')!;
    const cfg = parseProxyConfig(JSON.parse(one(objs, 'ConfigMap', 'migration-mesh-gateway').data['config.json']));
    const main = one(objs, 'Deployment', 'migration-mesh-gateway-0').spec.template.spec.containers[0];
    const port = (n: string) => main.ports.find((p: any) => p.name === n).containerPort;
    expect(port('metrics')).toBe(cfg.listen.admin.port);
    expect(port('tunnel')).toBe(cfg.listen.tunnel.port);
    expect(port('intercept')).toBe(cfg.listen.intercept.port);
    // cdk8s-plus-28 probes take the port number (the admin port, the one named `metrics`)
    expect(main.readinessProbe.httpGet).toEqual({ path: '/readyz', port: cfg.listen.admin.port, scheme: 'HTTP' });
    expect(main.livenessProbe.httpGet).toEqual({ path: '/healthz', port: cfg.listen.admin.port, scheme: 'HTTP' });
    expect(port('metrics')).toBe(cfg.listen.admin.port);
  });

  test('replicas of one cluster land on different nodes (required anti-affinity + hostname spread on the gateway set)', () => {
    const d = one(r.objects.get('fra-1')!, 'Deployment', 'migration-mesh-gateway-0');
    const pod = d.spec.template.spec;
    const set = { 'app.kubernetes.io/name': 'migration-mesh-gateway', 'migrationmesh.dev/gateway-set': 'fra-1' };
    expect(pod.topologySpreadConstraints).toEqual([
      { maxSkew: 1, topologyKey: 'kubernetes.io/hostname', whenUnsatisfiable: 'DoNotSchedule', labelSelector: { matchLabels: set } },
    ]);
    expect(pod.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution).toEqual([
      { labelSelector: { matchLabels: set }, topologyKey: 'kubernetes.io/hostname' },
    ]);
    // the set label matches every replica's pods
    for (const other of of(r.objects.get('fra-1')!, 'Deployment')) expect(other.spec.template.metadata.labels).toMatchObject(set);
    // no placement given in the example: no nodeSelector
    expect(pod.nodeSelector).toBeUndefined();
  });

  test('config and TLS are one projected volume (no subPath) of the runtime alone, so reloads and cert rotations reach it', () => {
    const pod = one(r.objects.get('fra-1')!, 'Deployment', 'migration-mesh-gateway-0').spec.template.spec;
    const vol = pod.volumes.find((v: any) => v.name === 'config');
    expect(vol.projected.sources).toEqual([
      { configMap: { name: 'migration-mesh-gateway', items: [{ key: 'config.json', path: 'config.json' }] } },
      { secret: { name: 'migration-mesh-gateway-tls', items: [{ key: 'ca.crt', path: 'tls/ca.crt' }, { key: 'tls.crt', path: 'tls/tls.crt' }, { key: 'tls.key', path: 'tls/tls.key' }] } },
    ]);
    // every container sees its own files at one path (test/gateway-secrets.test.ts: which keys each one reads)
    const volumeAt = Object.fromEntries([...pod.initContainers, ...pod.containers].map((c: any) => [c.name, c.volumeMounts.find((m: any) => m.mountPath === '/etc/migration-mesh')]));
    expect(volumeAt).toEqual({
      'setup-rules': { name: 'config-json', mountPath: '/etc/migration-mesh', readOnly: true },
      gateway: { name: 'config', mountPath: '/etc/migration-mesh', readOnly: true },
      failover: { name: 'keepalived-config', mountPath: '/etc/migration-mesh', readOnly: true },
      trust: { name: 'config-json', mountPath: '/etc/migration-mesh', readOnly: true },
    });
    for (const c of [...pod.initContainers, ...pod.containers]) expect(c.volumeMounts.some((m: any) => m.subPath)).toBe(false);
    // the runtime config names exactly those files
    const cfg = JSON.parse(one(r.objects.get('fra-1')!, 'ConfigMap').data['config.json']);
    // mtls-splice: the example keeps KubeVirt's migration TLS on (spec.gateway.payload defaults to splice)
    expect(cfg.tls).toEqual({ mode: 'mtls-splice', caFile: '/etc/migration-mesh/tls/ca.crt', certFile: '/etc/migration-mesh/tls/tls.crt', keyFile: '/etc/migration-mesh/tls/tls.key' });
  });

  test('cert-manager Certificate: URI SAN naming fleet and cluster, fleet issuer, ECDSA P-256 rotated; never a private key in the YAML', () => {
    for (const [name, objs] of r.objects) {
      const cert = one(objs, 'Certificate');
      expect(cert.apiVersion).toBe('cert-manager.io/v1');
      expect(cert.spec.uris).toEqual([`spiffe://sites/cluster/${name}`]);
      expect(cert.spec.issuerRef).toEqual({ name: 'sites-ca', kind: 'ClusterIssuer', group: 'cert-manager.io' });
      expect(cert.spec.privateKey).toEqual({ algorithm: 'ECDSA', size: 256, rotationPolicy: 'Always' });
      expect(cert.spec.usages).toEqual(expect.arrayContaining(['server auth', 'client auth']));
      expect(cert.spec.secretName).toBe('migration-mesh-gateway-tls');
      expect(of(objs, 'Secret')).toEqual([]);
    }
    for (const text of r.files.values()) expect(text).not.toMatch(/PRIVATE KEY|tls\.key:/);
  });

  test('SA, PDB and metrics Service select the gateway set; the Service port is the admin port', () => {
    const objs = r.objects.get('par-1')!;
    const set = { 'app.kubernetes.io/name': 'migration-mesh-gateway', 'migrationmesh.dev/gateway-set': 'par-1' };
    expect(one(objs, 'ServiceAccount').metadata.name).toBe('migration-mesh-gateway');
    for (const d of of(objs, 'Deployment')) expect(d.spec.template.spec.serviceAccountName).toBe('migration-mesh-gateway');
    const pdb = one(objs, 'PodDisruptionBudget');
    expect(pdb.spec).toEqual({ maxUnavailable: 1, selector: { matchLabels: set } });
    const svc = one(objs, 'Service');
    expect(svc.spec.selector).toEqual(set);
    // cdk8s-plus-28 takes numeric target ports: the container port named `metrics`
    expect(svc.spec.ports).toEqual([{ name: 'metrics', port: 15090, targetPort: 15090, protocol: 'TCP' }]);
    const main = one(objs, 'Deployment', 'migration-mesh-gateway-0').spec.template.spec.containers[0];
    expect(main.ports.find((p: any) => p.name === 'metrics').containerPort).toBe(15090);
    // the example does not ask for a ServiceMonitor
    expect(of(objs, 'ServiceMonitor')).toEqual([]);
  });

  test('MultiNetworkPolicy only where the cluster runs the controller; admits exactly the other gateways on the tunnel port', () => {
    expect(of(r.objects.get('fra-1')!, 'MultiNetworkPolicy')).toEqual([]);
    expect(of(r.objects.get('ams-1')!, 'MultiNetworkPolicy')).toEqual([]);
    const pol = one(r.objects.get('par-1')!, 'MultiNetworkPolicy');
    expect(pol.metadata.annotations['k8s.v1.cni.cncf.io/policy-for']).toBe('migration-mesh/lm-crosscluster');
    const others = r.plan.clusters.filter((c) => c.name !== 'par-1').flatMap((c) => c.gateways.map((g) => `${g.crossCluster.split('/')[0]}/32`)).sort();
    expect(pol.spec.ingress).toHaveLength(1);
    expect(pol.spec.ingress[0].from.map((f: any) => f.ipBlock.cidr).sort()).toEqual(others);
    expect(pol.spec.ingress[0].ports).toEqual([{ protocol: 'TCP', port: 15443 }]);
    // its own gateways are not admitted: they never talk to each other over the shared network
    const mine = r.plan.clusters.find((c) => c.name === 'par-1')!.gateways.map((g) => `${g.crossCluster.split('/')[0]}/32`);
    for (const m of mine) expect(others).not.toContain(m);
    expect(pol.spec.podSelector.matchLabels['migrationmesh.dev/gateway-set']).toBe('par-1');
  });
});

describe('reload vs restart', () => {
  test('a peer-table change (a cluster joins) leaves the pod templates of existing gateways byte-identical', () => {
    const doc = baseFleet();
    const before = synthesizeFleet(doc);
    const grown = synthesizeFleet(baseFleet({ clusters: [...doc.spec.clusters, { name: 'c', nodes: 2 }] }), { ledger: before.ledger });
    for (const name of ['a', 'b']) {
      const tpl = (r: typeof before) => of(r.objects.get(name)!, 'Deployment').map((d) => JSON.stringify(d.spec.template));
      expect(tpl(grown)).toEqual(tpl(before));
      const cm = (r: typeof before) => one(r.objects.get(name)!, 'ConfigMap').data['config.json'];
      expect(cm(grown)).not.toEqual(cm(before)); // the peer table did change: the runtime reloads it
      expect(JSON.parse(cm(grown)).peers.map((p: any) => p.cluster)).toContain('c');
    }
  });

  test('a change the runtime cannot reload (tunnel port) changes the restart hash on the pod template', () => {
    const a = synthesizeFleet(baseFleet());
    const b = synthesizeFleet(baseFleet({ gateway: { tunnelPort: 16443 } }));
    const hash = (r: typeof a) => one(r.objects.get('a')!, 'Deployment', 'migration-mesh-gateway-0').spec.template.metadata.annotations[GATEWAY_RESTART_HASH_ANNOTATION];
    expect(hash(a)).toMatch(/^[0-9a-f]{16}$/);
    expect(hash(b)).not.toEqual(hash(a));
    const cm = one(a.objects.get('a')!, 'ConfigMap');
    const cfg = parseProxyConfig(JSON.parse(cm.data['config.json']));
    expect(hash(a)).toBe(gatewayRestartHash(cfg, cm.data['keepalived.conf']));
  });
});

describe('TLS sources', () => {
  test('a user Secret is mounted as is; no Certificate is emitted', () => {
    const r = synthesizeFleet(baseFleet({ gateway: { tls: { secretName: 'my-gw-certs' } } }));
    const objs = r.objects.get('a')!;
    expect(of(objs, 'Certificate')).toEqual([]);
    const vol = one(objs, 'Deployment', 'migration-mesh-gateway-0').spec.template.spec.volumes.find((v: any) => v.name === 'config');
    expect(vol.projected.sources[1].secret.name).toBe('my-gw-certs');
  });

  test('plaintext: no Certificate, no Secret mounted, runtime config says plaintext', () => {
    const r = synthesizeFleet(baseFleet({ gateway: { tls: { plaintext: true } }, trust: { exchange: { enabled: false } } }));
    const objs = r.objects.get('b')!;
    expect(of(objs, 'Certificate')).toEqual([]);
    const vol = one(objs, 'Deployment', 'migration-mesh-gateway-0').spec.template.spec.volumes.find((v: any) => v.name === 'config');
    expect(vol.projected.sources).toHaveLength(1);
    expect(JSON.parse(one(objs, 'ConfigMap').data['config.json']).tls).toEqual({ mode: 'plaintext' });
  });

  test('a namespaced Issuer is referenced with its kind', () => {
    const r = synthesizeFleet(baseFleet({ gateway: { tls: { issuerRef: { name: 'fleet-ca', kind: 'Issuer' } } } }));
    expect(one(r.objects.get('a')!, 'Certificate').spec.issuerRef).toEqual({ name: 'fleet-ca', kind: 'Issuer', group: 'cert-manager.io' });
  });

  test('an empty issuer name is refused with the field and the fix', () => {
    expect(() => new GatewayTls(testChart(), 't', { namespace: 'x', fleet: 'f', cluster: 'c', source: { kind: 'issuer', name: '', issuerKind: 'ClusterIssuer' } }))
      .toThrow(/tls\.issuerRef\.name is empty; name the cert-manager Issuer/);
  });
});

describe('placement, ServiceMonitor, props', () => {
  test('spec.gateway.placement: nodeSelector and tolerations pass through; user anti-affinity terms are kept beside ours', () => {
    const userTerm = { labelSelector: { matchLabels: { app: 'noisy' } }, topologyKey: 'kubernetes.io/hostname' };
    const r = synthesizeFleet(baseFleet({
      gateway: {
        serviceMonitor: true,
        placement: {
          nodeSelector: { 'migrationmesh.dev/crosscluster': 'true' },
          tolerations: [{ key: 'gw', operator: 'Exists', effect: 'NoSchedule' }],
          affinity: { podAntiAffinity: { requiredDuringSchedulingIgnoredDuringExecution: [userTerm] } },
        },
      },
    }));
    const objs = r.objects.get('a')!;
    const pod = one(objs, 'Deployment', 'migration-mesh-gateway-1').spec.template.spec;
    expect(pod.nodeSelector).toEqual({ 'migrationmesh.dev/crosscluster': 'true' });
    expect(pod.tolerations).toEqual([{ key: 'gw', operator: 'Exists', effect: 'NoSchedule' }]);
    expect(pod.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution).toHaveLength(2);
    expect(pod.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0]).toEqual(userTerm);
    const sm = one(objs, 'ServiceMonitor');
    const svc = one(objs, 'Service');
    for (const [k, v] of Object.entries(sm.spec.selector.matchLabels)) expect(svc.metadata.labels[k]).toBe(v);
    expect(sm.spec.endpoints).toEqual([{ port: 'metrics', path: '/metrics', interval: '30s', scheme: 'http' }]);
    expect(sm.spec.namespaceSelector).toEqual({ matchNames: ['migration-mesh'] });
  });

  test('construct props: interface names, resources, pull policy, priority class, certificate lifetime', () => {
    const mesh = new CrossClusterMigrationMesh(testApp(), 'm', { fleet: baseFleet() });
    const chart = testChart();
    new MigrationProxy(chart, 'p', {
      plan: mesh.plan, cluster: mesh.plan.clusters[0],
      interfaces: { inCluster: 'lm-in', crossCluster: 'lm-xc' },
      resources: { cpu: { request: kplus.Cpu.units(2) }, memory: { request: Size.gibibytes(1), limit: Size.gibibytes(2) } },
      imagePullPolicy: kplus.ImagePullPolicy.ALWAYS, priorityClassName: 'system-cluster-critical',
      certificate: { duration: '720h', renewBefore: '240h' },
      multiNetworkPolicy: true,
    });
    const objs = Testing.synth(chart);
    const d = one(objs, 'Deployment', 'migration-mesh-gateway-0');
    expect(selection(d).map((e: any) => e.interface)).toEqual(['lm-in', 'lm-xc']);
    // cdk8s-plus-28 writes memory in Mi; we write it as the API server stores it (test/apply.real.test.ts)
    expect(d.spec.template.spec.containers[0].resources).toEqual({ requests: { cpu: '2', memory: '1Gi' }, limits: { memory: '2Gi' } });
    expect(d.spec.template.spec.containers[0].imagePullPolicy).toBe('Always');
    expect(d.spec.template.spec.priorityClassName).toBe('system-cluster-critical');
    expect(one(objs, 'Certificate').spec).toMatchObject({ duration: '720h', renewBefore: '240h' });
    expect(of(objs, 'MultiNetworkPolicy')).toHaveLength(1);
  });

  test('bad interface names are refused (Linux IFNAMSIZ)', () => {
    const replica = { replica: 0, inCluster: '10.0.0.1/24', crossCluster: '192.168.0.1/24' };
    expect(() => gatewayNetworkSelection({ namespace: 'n', inClusterNad: 'a', crossClusterNad: 'b', replica, interfaces: { inCluster: 'a-very-long-ifname', crossCluster: 'xc0' } }))
      .toThrow(/interfaces\.inCluster: interface name 'a-very-long-ifname' is invalid; use 1-15 characters/);
    expect(() => gatewayNetworkSelection({ namespace: 'n', inClusterNad: 'a', crossClusterNad: 'b', replica, interfaces: { inCluster: 'x', crossCluster: 'x' } }))
      .toThrow(/both 'x'/);
  });

  test('a one-cluster fleet: the policy denies everything on the cross-cluster attachment', () => {
    const objs = Testing.synth((() => {
      const c = testChart();
      new GatewayCrossClusterPolicy(c, 'p', { namespace: 'n', crossClusterNad: 'xc', podSelector: { a: 'b' }, peerCidrs: [], tunnelPort: 15443 });
      return c;
    })());
    expect(objs[0].spec.ingress).toEqual([]);
    expect(objs[0].spec.egress).toEqual([]);
    expect(() => new GatewayCrossClusterPolicy(testChart(), 'q', { namespace: 'n', crossClusterNad: 'xc', podSelector: {}, peerCidrs: [], tunnelPort: 0 }))
      .toThrow(/tunnelPort: 0 is not a TCP port/);
  });
});

describe('gateway failover (VIP)', () => {
  const vipOf = (r: ReturnType<typeof synthesizeFleet>, c: string) => r.plan.clusters.find((x) => x.name === c)!.gatewayVip;
  const nad = (r: ReturnType<typeof synthesizeFleet>, c: string) => JSON.parse(one(r.objects.get(c)!, 'NetworkAttachmentDefinition', 'lm-migration').spec.config);

  test('2 replicas: one more in-cluster address, the lowest free after the replicas; routes go via it; whereabouts excludes it; the runtime counts it as its own', () => {
    const r = synthesizeFleet(baseFleet());
    const a = r.plan.clusters.find((c) => c.name === 'a')!;
    expect(a.gateways.map((g) => g.inCluster)).toEqual(['10.200.0.1/24', '10.200.0.2/24']);
    expect(a.gatewayVip).toBe('10.200.0.3/24');
    expect(nad(r, 'a').ipam.routes).toEqual([{ dst: '10.200.0.0/16', gw: '10.200.0.3' }]);
    expect(nad(r, 'a').ipam.exclude).toEqual(['10.200.0.1/32', '10.200.0.2/32', '10.200.0.3/32']);
    expect(a.capacity.inCluster!.needed).toBe(3 + 2 + 2 + 1 + 2);
    const cfg = JSON.parse(one(r.objects.get('a')!, 'ConfigMap').data['config.json']);
    expect(cfg.ownAddresses).toContain('10.200.0.3');
    expect(r.ledger.clusters.a.gatewayVip).toBe('10.200.0.3');
  });

  test('keepalived.conf: unicast VRRP between the replicas\' own addresses, the VIP on the in-cluster interface, nopreempt, readiness tracked', () => {
    const r = synthesizeFleet(baseFleet());
    const conf: string = one(r.objects.get('b')!, 'ConfigMap').data['keepalived.conf'];
    expect(conf).toContain('  virtual_router_id 51\n');
    expect(conf).toContain('  state BACKUP\n  nopreempt\n  interface mig0\n');
    expect(conf).toContain('    10.200.1.3/24 dev mig0\n');
    expect(conf).toContain('  @replica-0 unicast_src_ip 10.200.1.1\n  @replica-1 unicast_src_ip 10.200.1.2\n');
    expect(conf).toContain('    @^replica-0 10.200.1.1\n    @^replica-1 10.200.1.2\n');
    expect(conf).toContain('http://127.0.0.1:15090/readyz');
    // the runtime's admin port is the one probed
    expect(JSON.parse(one(r.objects.get('b')!, 'ConfigMap').data['config.json']).listen.admin.port).toBe(15090);
  });

  test('1 replica, or failover none: no VIP, no sidecar, routes via replica 0 as before', () => {
    for (const r of [
      synthesizeFleet(baseFleet({ gateway: { replicas: 1 } })),
      synthesizeFleet(baseFleet({ gateway: { failover: { mode: 'none' } } })),
    ]) {
      expect(vipOf(r, 'a')).toBeUndefined();
      expect(nad(r, 'a').ipam.routes).toEqual([{ dst: '10.200.0.0/16', gw: '10.200.0.1' }]);
      expect(one(r.objects.get('a')!, 'ConfigMap').data['keepalived.conf']).toBeUndefined();
      for (const d of of(r.objects.get('a')!, 'Deployment')) expect(d.spec.template.spec.containers.map((c: any) => c.name)).toEqual(['gateway', 'trust']);
    }
  });

  test('the VIP is stable: growing to 3 replicas keeps it (the new replica takes the next free address); shrinking to 1 frees it', () => {
    const before = synthesizeFleet(baseFleet());
    const grown = synthesizeFleet(baseFleet({ gateway: { replicas: 3 } }), { ledger: before.ledger });
    const a = grown.plan.clusters.find((c) => c.name === 'a')!;
    expect(a.gatewayVip).toBe('10.200.0.3/24');
    expect(a.gateways.map((g) => g.inCluster)).toEqual(['10.200.0.1/24', '10.200.0.2/24', '10.200.0.4/24']);
    expect(grown.changes.filter((c) => c.field === 'gatewayVip')).toEqual([]);
    const shrunk = synthesizeFleet(baseFleet({ gateway: { replicas: 1 } }), { ledger: grown.ledger });
    expect(shrunk.ledger.clusters.a.gatewayVip).toBeUndefined();
    expect(shrunk.changes).toContainEqual({ cluster: 'a', field: 'gatewayVip', from: '10.200.0.3', to: undefined });
  });

  test('upgrading a ledger written before failover existed: each cluster gains a VIP, no other address moves', () => {
    const file = path.join(__dirname, '..', 'examples', 'vep-10-clusters.fleet.yaml');
    const current = loadLedgerFile(ledgerPathFor(file))!;
    const old = JSON.parse(JSON.stringify(current));
    for (const c of Object.values<any>(old.clusters)) delete c.gatewayVip;
    const r = synthesizeFleet(loadFleetFile(file), { ledger: old });
    expect(r.changes.map((c) => `${c.cluster}.${c.field}: ${c.from ?? '-'} -> ${c.to}`)).toEqual(
      Object.entries<any>(current.clusters).map(([n, c]) => `${n}.gatewayVip: - -> ${c.gatewayVip}`));
    expect(r.ledger).toEqual(current);
  });

  test('a VRRP id outside 1-255 is refused with the field path', () => {
    expect(() => synthesizeFleet(baseFleet({ gateway: { failover: { virtualRouterId: 256 } } }))).toThrow(/spec\.gateway\.failover\.virtualRouterId/);
  });
});
