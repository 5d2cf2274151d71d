/**
 * Proves the schema harness (test/support/schemas.ts) accepts valid objects and FAILS on
 * unknown fields, wrong types, proposed-only API, bad CNI configs and unknown kinds.
 */
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { describeSchema, validateCniConfig, validateManifestFiles, validateObject } from './support/schemas';

const expectValid = (obj: any, opts?: Parameters<typeof validateObject>[1]) => expect(validateObject(obj, opts)).toEqual([]);
const expectInvalid = (obj: any, match: RegExp, opts?: Parameters<typeof validateObject>[1]) => {
  const errs = validateObject(obj, opts);
  expect(errs.length).toBeGreaterThan(0);
  expect(errs.join('\n')).toMatch(match);
  return errs;
};

// ---------------------------------------------------------------------------------------------
// KubeVirt (partial object for server-side apply)

const kubevirt = () => ({
  apiVersion: 'kubevirt.io/v1',
  kind: 'KubeVirt',
  metadata: { name: 'kubevirt', namespace: 'kubevirt' },
  spec: {
    configuration: {
      migrations: { network: 'x' },
      developerConfiguration: { featureGates: ['DecentralizedLiveMigration'] },
    },
  },
});

describe('KubeVirt CR', () => {
  test('valid partial object passes (released and pr17922)', () => {
    expectValid(kubevirt());
    expectValid(kubevirt(), { kubevirtSchema: 'pr17922' });
  });

  test('migrations.crossClusterNetwork fails against released, passes against pr17922', () => {
    const kv: any = kubevirt();
    kv.spec.configuration.migrations.crossClusterNetwork = 'crosscluster-network';
    kv.spec.configuration.migrations.decentralizedLiveMigrationDatapath = 'Proxy';
    const errs = expectInvalid(kv, /\.spec\.configuration\.migrations\.crossClusterNetwork: unknown field/);
    expect(errs[0]).toMatch(/^KubeVirt\/kubevirt: /);
    expectValid(kv, { kubevirtSchema: 'pr17922' });
  });

  test('spec.synchronizationPlacement is PR-only', () => {
    const kv: any = kubevirt();
    kv.spec.synchronizationPlacement = { nodePlacement: { nodeSelector: { a: 'b' } } };
    expectInvalid(kv, /\.spec\.synchronizationPlacement: unknown field/);
    expectValid(kv, { kubevirtSchema: 'pr17922' });
  });

  test('typo migrations.netwrok fails', () => {
    const kv: any = kubevirt();
    kv.spec.configuration.migrations = { netwrok: 'x' };
    expectInvalid(kv, /KubeVirt\/kubevirt: \.spec\.configuration\.migrations\.netwrok: unknown field "netwrok"/);
  });

  test('wrong type parallelMigrationsPerCluster: "5" fails', () => {
    const kv: any = kubevirt();
    kv.spec.configuration.migrations.parallelMigrationsPerCluster = '5';
    expectInvalid(kv, /\.spec\.configuration\.migrations\.parallelMigrationsPerCluster: must be integer/);
  });

  test('metadata is checked as a real ObjectMeta', () => {
    const kv: any = kubevirt();
    kv.metadata.labelz = { a: 'b' };
    expectInvalid(kv, /\.metadata\.labelz: unknown field/);
  });

  test('the KubeVirt CRD schema only requires `spec` (partial objects need nothing else)', () => {
    const { spec, ...noSpec } = kubevirt();
    void spec;
    expectInvalid(noSpec, /must have required property 'spec'/);
  });
});

// ---------------------------------------------------------------------------------------------
// core kinds (kubernetes-models typings)

const deployment = () => ({
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: { name: 'mm-gateway', namespace: 'kubevirt', labels: { app: 'mm-gateway' } },
  spec: {
    replicas: 2,
    selector: { matchLabels: { app: 'mm-gateway' } },
    template: {
      metadata: {
        labels: { app: 'mm-gateway' },
        annotations: { 'k8s.v1.cni.cncf.io/networks': 'migration-network@migration0' },
      },
      spec: {
        containers: [
          {
            name: 'proxy',
            image: 'example.org/mm/proxy:1.0',
            args: ['--listen', ':9185'],
            ports: [{ name: 'sync', containerPort: 9185, protocol: 'TCP' }],
            resources: { requests: { cpu: '100m', memory: '64Mi' } },
            readinessProbe: { tcpSocket: { port: 'sync' }, periodSeconds: 5 },
          },
        ],
        tolerations: [{ key: 'node-role.kubernetes.io/infra', operator: 'Exists', effect: 'NoSchedule' }],
      },
    },
  },
});

describe('core kinds', () => {
  test('valid Deployment passes', () => {
    expectValid(deployment());
    expect(describeSchema('apps/v1', 'Deployment')?.flavour).toBe('dts');
  });

  test('unknown field in the pod spec fails', () => {
    const d: any = deployment();
    d.spec.template.spec.hostNetwrok = true;
    expectInvalid(d, /Deployment\/mm-gateway: \.spec\.template\.spec\.hostNetwrok: unknown field/);
  });

  test('unknown field in a container and wrong type fail', () => {
    const d: any = deployment();
    d.spec.template.spec.containers[0].imagePullPolicyy = 'Always';
    d.spec.replicas = 'two';
    const errs = expectInvalid(d, /containers\[0\]\.imagePullPolicyy: unknown field/);
    expect(errs.join('\n')).toMatch(/\.spec\.replicas: must be number/);
  });

  test('other core kinds', () => {
    expectValid({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c' }, data: { a: 'b' } });
    expectValid({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 's' }, type: 'Opaque', stringData: { a: 'b' } });
    expectValid({ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'sa' } });
    expectValid({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'ns' } });
    expectValid({
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'svc' },
      spec: { selector: { app: 'x' }, ports: [{ name: 'sync', port: 9185, targetPort: 'sync' }] },
    });
    expectValid({
      apiVersion: 'policy/v1',
      kind: 'PodDisruptionBudget',
      metadata: { name: 'pdb' },
      spec: { minAvailable: 1, selector: { matchLabels: { app: 'x' } } },
    });
    expectValid({
      apiVersion: 'networking.k8s.io/v1',
      kind: 'NetworkPolicy',
      metadata: { name: 'np' },
      spec: { podSelector: {}, policyTypes: ['Ingress'], ingress: [{ ports: [{ port: 9185, protocol: 'TCP' }] }] },
    });
    expectInvalid({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c' }, date: { a: 'b' } }, /\.date: unknown field/);
    expectInvalid({ apiVersion: 'v1', kind: 'Service', metadata: { name: 'svc' }, spec: { ports: [{ port: '80' }] } }, /port: must be number/);
  });

  test('unknown kind / apiVersion fails', () => {
    expectInvalid({ apiVersion: 'example.org/v1', kind: 'Frobnicator', metadata: { name: 'f' } }, /Frobnicator\/f: \.: no schema for example\.org\/v1 Frobnicator/);
    expectInvalid({ apiVersion: 'apps/v2', kind: 'Deployment', metadata: { name: 'd' } }, /no schema for apps\/v2 Deployment/);
  });
});

// ---------------------------------------------------------------------------------------------
// NAD + CNI config

const nad = (config: object) => ({
  apiVersion: 'k8s.cni.cncf.io/v1',
  kind: 'NetworkAttachmentDefinition',
  metadata: { name: 'migration-network', namespace: 'kubevirt' },
  spec: { config: JSON.stringify(config) },
});
const macvlanWhereabouts = {
  cniVersion: '0.3.1',
  name: 'migration-bridge',
  type: 'macvlan',
  master: 'eth1',
  mode: 'bridge',
  ipam: { type: 'whereabouts', range: '10.1.1.0/24', exclude: ['10.1.1.0/30'], routes: [{ dst: '10.2.0.0/16', gw: '10.1.1.1' }] },
};

describe('NetworkAttachmentDefinition / CNI', () => {
  test('NAD with valid macvlan + whereabouts config passes', () => {
    expectValid(nad(macvlanWhereabouts));
    expect(validateCniConfig(JSON.stringify(macvlanWhereabouts))).toEqual([]);
  });

  test('bridge vlan 5000 fails', () => {
    const errs = expectInvalid(nad({ cniVersion: '0.3.1', name: 'b', type: 'bridge', bridge: 'br1', vlan: 5000, ipam: { type: 'whereabouts', range: '10.0.0.0/24' } }), /\.spec\.config: \.vlan: must be an integer in \[0, 4094\]/);
    expect(errs[0]).toMatch(/^NetworkAttachmentDefinition\/migration-network: /);
    expect(validateCniConfig(JSON.stringify({ cniVersion: '0.3.1', name: 'b', type: 'bridge', vlan: 100 }))).toEqual([]);
  });

  test('unknown CNI key fails (plugin and ipam level)', () => {
    expect(validateCniConfig(JSON.stringify({ ...macvlanWhereabouts, vlanid: 3 })).join('\n')).toMatch(/\.vlanid: unknown key "vlanid" for CNI plugin macvlan/);
    expect(validateCniConfig(JSON.stringify({ ...macvlanWhereabouts, ipam: { type: 'whereabouts', range: '10.0.0.0/24', rangeStart: '10.0.0.5' } })).join('\n')).toMatch(
      /\.ipam\.rangeStart: unknown key/,
    );
  });

  test('value checks: whereabouts range/exclude, macvlan mode, vlan/ipvlan/host-device/static', () => {
    const bad = (c: object) => validateCniConfig(JSON.stringify(c));
    expect(bad({ ...macvlanWhereabouts, ipam: { type: 'whereabouts', range: '10.0.0.0-10.0.0.50/24' } })).toEqual([]);
    expect(bad({ ...macvlanWhereabouts, ipam: { type: 'whereabouts', range: '10.0.0.0' } }).join()).toMatch(/range: must be a CIDR/);
    expect(bad({ ...macvlanWhereabouts, ipam: { type: 'whereabouts', range: '10.0.0.0/24', exclude: '10.0.0.1/32' } }).join()).toMatch(/exclude: must be an array/);
    expect(bad({ ...macvlanWhereabouts, mode: 'l2' }).join()).toMatch(/\.mode: must be one of/);
    expect(bad({ ...macvlanWhereabouts, mtu: '1500' }).join()).toMatch(/\.mtu: must be an integer/);
    expect(bad({ cniVersion: '1.0.0', name: 'v', type: 'vlan', master: 'eth0', vlanId: 100, ipam: { type: 'static', addresses: [{ address: '10.0.0.2/24', gateway: '10.0.0.1' }] } })).toEqual([]);
    expect(bad({ cniVersion: '1.0.0', name: 'v', type: 'vlan', master: 'eth0' }).join()).toMatch(/missing required key "vlanId"/);
    expect(bad({ cniVersion: '1.0.0', name: 'i', type: 'ipvlan', master: 'eth0', mode: 'l3s', ipam: { type: 'whereabouts', range: 'fd00::/64' } })).toEqual([]);
    expect(bad({ cniVersion: '1.0.0', name: 'i', type: 'ipvlan', mode: 'bridge' }).join()).toMatch(/\.mode: must be one of "l2", "l3", "l3s"/);
    expect(bad({ cniVersion: '1.0.0', name: 'h', type: 'host-device', device: 'eth2' })).toEqual([]);
    expect(bad({ cniVersion: '0.3.1', name: 't', type: 'tuning' }).join()).toMatch(/unsupported CNI plugin type "tuning"/);
    expect(bad({ cniVersion: '0.3.1', name: 't', type: 'macvlan', ipam: { type: 'host-local' } }).join()).toMatch(/unsupported IPAM type "host-local"/);
    expect(bad({ cniVersion: '0.3.1', name: 't', type: 'macvlan', ipam: { type: 'static', routes: [{ dst: '0.0.0.0/0', via: '1.1.1.1' }] } }).join()).toMatch(/routes\[0\]\.via: unknown key/);
    expect(validateCniConfig('{not json')[0]).toMatch(/not valid JSON/);
  });

  test('conflist (plugins) form', () => {
    const list = { cniVersion: '1.0.0', name: 'l', plugins: [{ type: 'bridge', bridge: 'br0', ipam: { type: 'whereabouts', range: '10.9.0.0/16' } }, { type: 'macvlan', master: 'eth1' }] };
    expect(validateCniConfig(JSON.stringify(list))).toEqual([]);
    list.plugins[1] = { type: 'macvlan', master: 'eth1', foo: 1 } as any;
    expect(validateCniConfig(JSON.stringify(list)).join()).toMatch(/\.plugins\[1\]\.foo: unknown key/);
    expect(validateCniConfig(JSON.stringify({ cniVersion: '1.0.0', name: 'l', plugins: [], extra: 1 })).join('\n')).toMatch(/\.extra: unknown key[\s\S]*non-empty/);
  });

  test('NAD object itself is strict', () => {
    const n: any = nad(macvlanWhereabouts);
    n.spec.configg = '{}';
    expectInvalid(n, /\.spec\.configg: unknown field/);
  });
});

// ---------------------------------------------------------------------------------------------
// third-party CRDs

describe('cert-manager', () => {
  const cert = () => ({
    apiVersion: 'cert-manager.io/v1',
    kind: 'Certificate',
    metadata: { name: 'mm-sync', namespace: 'kubevirt' },
    spec: {
      secretName: 'mm-sync-tls',
      duration: '2160h',
      renewBefore: '360h',
      commonName: 'mm-sync',
      uris: ['spiffe://cluster-a/ns/kubevirt/sa/mm-gateway'],
      dnsNames: ['mm-sync.kubevirt.svc'],
      ipAddresses: ['10.1.1.10'],
      usages: ['server auth', 'client auth'],
      privateKey: { algorithm: 'ECDSA', size: 256, rotationPolicy: 'Always' },
      issuerRef: { name: 'mm-ca', kind: 'Issuer', group: 'cert-manager.io' },
    },
  });
  test('valid Certificate with uris passes', () => {
    expectValid(cert());
    // verbatim upstream CRD in test/fixtures/crds takes precedence over the typings fallback
    expect(describeSchema('cert-manager.io/v1', 'Certificate')?.origin).toMatch(/test\/fixtures\/crds\/cert-manager\.io_certificates\.yaml$/);
  });
  test('bogus field / bad enum fail', () => {
    const c: any = cert();
    c.spec.uri = ['spiffe://x'];
    expectInvalid(c, /Certificate\/mm-sync: \.spec\.uri: unknown field/);
    const d: any = cert();
    d.spec.privateKey.algorithm = 'DSA';
    expectInvalid(d, /\.spec\.privateKey\.algorithm: must be equal to one of the allowed values/);
  });
  test('Issuer and ClusterIssuer', () => {
    expectValid({ apiVersion: 'cert-manager.io/v1', kind: 'Issuer', metadata: { name: 'mm-ca', namespace: 'kubevirt' }, spec: { ca: { secretName: 'mm-ca' } } });
    expectValid({ apiVersion: 'cert-manager.io/v1', kind: 'ClusterIssuer', metadata: { name: 'selfsigned' }, spec: { selfSigned: {} } });
    expectInvalid({ apiVersion: 'cert-manager.io/v1', kind: 'Issuer', metadata: { name: 'i' }, spec: { ca: { secret: 'x' } } }, /\.spec\.ca\.secret: unknown field/);
  });
});

describe('monitoring / policy / gitops CRDs', () => {
  const sm = () => ({
    apiVersion: 'monitoring.coreos.com/v1',
    kind: 'ServiceMonitor',
    metadata: { name: 'mm-gateway', namespace: 'kubevirt', labels: { release: 'prom' } },
    spec: {
      selector: { matchLabels: { app: 'mm-gateway' } },
      namespaceSelector: { matchNames: ['kubevirt'] },
      endpoints: [{ port: 'metrics', interval: '30s', path: '/metrics', scheme: 'http' }],
    },
  });
  test('ServiceMonitor', () => {
    expectValid(sm());
    const s: any = sm();
    s.spec.endpoints[0].intervall = '30s';
    expectInvalid(s, /ServiceMonitor\/mm-gateway: \.spec\.endpoints\[0\]\.intervall: unknown field/);
  });

  const mnp = () => ({
    apiVersion: 'k8s.cni.cncf.io/v1beta1',
    kind: 'MultiNetworkPolicy',
    metadata: { name: 'allow-sync', namespace: 'kubevirt', annotations: { 'k8s.v1.cni.cncf.io/policy-for': 'kubevirt/migration-network' } },
    spec: {
      podSelector: { matchLabels: { 'kubevirt.io': 'virt-handler' } },
      policyTypes: ['Ingress'],
      ingress: [{ from: [{ ipBlock: { cidr: '10.1.1.0/24' } }], ports: [{ protocol: 'TCP', port: 9185 }] }],
    },
  });
  test('MultiNetworkPolicy', () => {
    expect(describeSchema('k8s.cni.cncf.io/v1beta1', 'MultiNetworkPolicy')?.flavour).toBe('crd');
    expectValid(mnp());
    const m: any = mnp();
    m.spec.ingress[0].from[0].ipBlock.exception = ['10.1.1.1/32'];
    expectInvalid(m, /\.spec\.ingress\[0\]\.from\[0\]\.ipBlock\.exception: unknown field/);
  });

  const appset = () => ({
    apiVersion: 'argoproj.io/v1alpha1',
    kind: 'ApplicationSet',
    metadata: { name: 'migration-mesh', namespace: 'argocd' },
    spec: {
      goTemplate: true,
      generators: [{ list: { elements: [{ cluster: 'a', url: 'https://a.example:6443' }] } }],
      template: {
        metadata: { name: 'mm-{{.cluster}}' },
        spec: {
          project: 'default',
          source: { repoURL: 'https://git.example/mm.git', targetRevision: 'main', path: 'dist/{{.cluster}}' },
          destination: { server: '{{.url}}', namespace: 'kubevirt' },
          syncPolicy: { automated: { prune: true, selfHeal: true }, syncOptions: ['ServerSideApply=true'] },
        },
      },
    },
  });
  test('ApplicationSet', () => {
    expectValid(appset());
    const a: any = appset();
    a.spec.template.spec.destinaton = a.spec.template.spec.destination;
    expectInvalid(a, /ApplicationSet\/migration-mesh: \.spec\.template\.spec\.destinaton: unknown field/);
  });

  const ks = () => ({
    apiVersion: 'kustomize.toolkit.fluxcd.io/v1',
    kind: 'Kustomization',
    metadata: { name: 'migration-mesh', namespace: 'flux-system' },
    spec: { interval: '10m', path: './dist/cluster-a', prune: true, sourceRef: { kind: 'GitRepository', name: 'mm' }, targetNamespace: 'kubevirt' },
  });
  test('Flux Kustomization and GitRepository', () => {
    expectValid(ks());
    const k: any = ks();
    k.spec.prunee = true;
    expectInvalid(k, /Kustomization\/migration-mesh: \.spec\.prunee: unknown field/);
    expectValid({
      apiVersion: 'source.toolkit.fluxcd.io/v1',
      kind: 'GitRepository',
      metadata: { name: 'mm', namespace: 'flux-system' },
      spec: { interval: '1m', url: 'https://git.example/mm.git', ref: { branch: 'main' } },
    });
  });
});

describe('HCO HyperConverged', () => {
  // Schema: test/fixtures/crds/hco.kubevirt.io_hyperconvergeds.excerpt.yaml, an excerpt of kubevirt/hyperconverged-cluster-operator
  // deploy/crds/hco00.crd.yaml @0136414e (see test/fixtures/crds/SOURCES.md): liveMigrationConfig, featureGates, infra and
  // workloads in full; every other spec key reduced to its type, so any field emitted under those is flagged.
  const hco = () => ({
    apiVersion: 'hco.kubevirt.io/v1beta1',
    kind: 'HyperConverged',
    metadata: { name: 'kubevirt-hyperconverged', namespace: 'openshift-cnv' },
    spec: {
      liveMigrationConfig: { network: 'lm-migration', parallelMigrationsPerCluster: 5, bandwidthPerMigration: '64Mi' },
      infra: { nodePlacement: {} },
    },
  });

  test('the HCO CRD excerpt is loaded from the fixtures', () => {
    const info = describeSchema('hco.kubevirt.io/v1beta1', 'HyperConverged');
    expect(info?.flavour).toBe('crd');
    expect(info?.origin).toMatch(/test\/fixtures\/crds\/hco\.kubevirt\.io_hyperconvergeds\.excerpt\.yaml$/);
  });

  test('liveMigrationConfig.network + infra.nodePlacement passes, bogus field fails', () => {
    expectValid(hco());
    const h: any = hco();
    h.spec.liveMigrationConfig.netwrok = 'x';
    expectInvalid(h, /HyperConverged\/kubevirt-hyperconverged: \.spec\.liveMigrationConfig\.netwrok: unknown field/);
  });

  test('nodePlacement affinity/tolerations are checked in full (infra and workloads)', () => {
    const h: any = hco();
    const placement = {
      nodeSelector: { 'node-role.kubernetes.io/worker': '' },
      tolerations: [{ key: 'dedicated', operator: 'Equal', value: 'virt', effect: 'NoSchedule', tolerationSeconds: 30 }],
      affinity: {
        nodeAffinity: {
          requiredDuringSchedulingIgnoredDuringExecution: {
            nodeSelectorTerms: [{ matchExpressions: [{ key: 'kubernetes.io/arch', operator: 'In', values: ['amd64'] }] }],
          },
        },
        podAntiAffinity: {
          preferredDuringSchedulingIgnoredDuringExecution: [
            { weight: 50, podAffinityTerm: { topologyKey: 'kubernetes.io/hostname', labelSelector: { matchLabels: { app: 'x' } } } },
          ],
        },
      },
    };
    h.spec.infra.nodePlacement = placement;
    h.spec.workloads = { nodePlacement: placement };
    expectValid(h);
    const bad: any = hco();
    bad.spec.workloads = { nodePlacement: { tolerations: [{ key: 'k', efect: 'NoSchedule' }] } };
    expectInvalid(bad, /\.spec\.workloads\.nodePlacement\.tolerations\[0\]\.efect: unknown field/);
    const noTopology: any = hco();
    noTopology.spec.infra.nodePlacement = { affinity: { podAffinity: { requiredDuringSchedulingIgnoredDuringExecution: [{ labelSelector: {} }] } } };
    expectInvalid(noTopology, /must have required property 'topologyKey'/);
  });

  test('featureGates: known gates pass; decentralizedLiveMigration is not in this CRD version', () => {
    const h: any = hco();
    h.spec.featureGates = { persistentReservation: true, deployKubeSecondaryDNS: false };
    expectValid(h);
    // The vendored CRD (@0136414e) predates the HCO `decentralizedLiveMigration` gate (it exists in newer
    // api/v1beta1/hyperconverged_types.go, e.g. @00913c63, but no CRD of that vintage is in the index):
    // against this schema the gate is an unknown field.
    h.spec.featureGates.decentralizedLiveMigration = true;
    expectInvalid(h, /\.spec\.featureGates\.decentralizedLiveMigration: unknown field/);
  });

  test('fields under subtrees omitted from the excerpt are flagged; wrong types and name fail', () => {
    const h: any = hco();
    h.spec.filesystemOverhead = { global: '0.1' };
    expectInvalid(h, /\.spec\.filesystemOverhead\.global: unknown field/);
    // certConfig is kept in full (issue #10): its fields pass, a misspelled one fails
    const c: any = hco();
    c.spec.certConfig = { ca: { duration: '48h0m0s', renewBefore: '24h0m0s' } };
    expect(validateObject(c)).toEqual([]);
    c.spec.certConfig.ca.durationn = '1h';
    expectInvalid(c, /\.spec\.certConfig\.ca\.durationn: unknown field/);
    const t: any = hco();
    t.spec.liveMigrationConfig.parallelMigrationsPerCluster = 'five';
    t.spec.uninstallStrategy = 'Yolo';
    const errs = expectInvalid(t, /\.spec\.liveMigrationConfig\.parallelMigrationsPerCluster: must be integer/);
    expect(errs.join('\n')).toMatch(/\.spec\.uninstallStrategy: must be equal to one of the allowed values/);
    const n: any = hco();
    n.metadata.name = 'hco';
    expectInvalid(n, /\.metadata\.name: must match pattern "kubevirt-hyperconverged"/);
  });
});

describe('validateManifestFiles', () => {
  test('multi-doc YAML files and directories', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mm-schemas-'));
    try {
      const YAML = require('yaml');
      fs.writeFileSync(path.join(dir, 'ok.yaml'), [kubevirt(), nad(macvlanWhereabouts), deployment()].map((d) => YAML.stringify(d)).join('---\n'));
      expect(validateManifestFiles(dir)).toEqual([]);
      const badNad = nad({ ...macvlanWhereabouts, foo: 1 });
      const badKv: any = kubevirt();
      badKv.spec.configuration.migrations.crossClusterNetwork = 'x';
      fs.writeFileSync(path.join(dir, 'bad.yaml'), ['---', YAML.stringify(badNad), '---', YAML.stringify(badKv)].join('\n'));
      const errs = validateManifestFiles([path.join(dir, 'bad.yaml')]);
      expect(errs.join('\n')).toMatch(/bad\.yaml#\d: NetworkAttachmentDefinition\/migration-network: \.spec\.config: \.foo: unknown key/);
      expect(errs.join('\n')).toMatch(/bad\.yaml#\d: KubeVirt\/kubevirt: .*crossClusterNetwork: unknown field/);
      expect(validateManifestFiles([path.join(dir, 'bad.yaml')], { kubevirtSchema: 'pr17922' }).join('\n')).not.toMatch(/crossClusterNetwork/);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
