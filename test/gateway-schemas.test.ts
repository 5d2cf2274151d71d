/**
 * Every gateway object validates against its upstream schema, unknown fields included, in every
 * variant the fleet can ask for (TLS issuer/secret/plaintext, ServiceMonitor, MultiNetworkPolicy,
 * placement). Schema origins (see test/fixtures/crds/SOURCES.md):
 *   - Certificate (cert-manager.io/v1): verbatim upstream CRD, cert-manager/cert-manager
 *     deploy/crds/cert-manager.io_certificates.yaml @0509c05a
 *   - MultiNetworkPolicy (k8s.cni.cncf.io/v1beta1): verbatim upstream CRD, k8snetworkplumbingwg/multi-networkpolicy
 *     scheme.yml @c42a39ea
 *   - NetworkAttachmentDefinition: shared/schemas/nad (network-attachment-definition-client)
 *   - ServiceMonitor (monitoring.coreos.com/v1): @kubernetes-models/prometheus-operator typings (generated from the
 *     upstream CRD; the CRD file itself, prometheus-operator example/prometheus-operator-crd/
 *     monitoring.coreos.com_servicemonitors.yaml, 71,103 chars, is not vendored yet)
 *   - PrometheusRule (monitoring.coreos.com/v1): verbatim upstream CRD, prometheus-operator/prometheus-operator
 *     example/prometheus-operator-crd/monitoring.coreos.com_prometheusrules.yaml @2de7fa35
 *   - Deployment, Service, ServiceAccount, PodDisruptionBudget, ConfigMap, Namespace: kubernetes-models typings
 */
import { synthesizeFleet } from '../cli/synthesize-fleet';
import { describeSchema, validateObject } from './support/schemas';
import { baseFleet } from './support/fleets';

const gatewayKinds = new Set(['Namespace', 'NetworkAttachmentDefinition', 'ConfigMap', 'ServiceAccount', 'Deployment', 'PodDisruptionBudget', 'Service', 'ServiceMonitor', 'PrometheusRule', 'Certificate', 'MultiNetworkPolicy']);

const variants: [string, Parameters<typeof baseFleet>[0]][] = [
  ['issuer (default), ServiceMonitor, placement, multi-network policy', {
    gateway: {
      serviceMonitor: true,
      placement: {
        nodeSelector: { 'migrationmesh.dev/crosscluster': 'true' },
        tolerations: [{ key: 'gw', operator: 'Exists', effect: 'NoSchedule' }],
        affinity: { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [{ matchExpressions: [{ key: 'kubernetes.io/os', operator: 'In', values: ['linux'] }] }] } } },
      },
    },
    clusters: [{ name: 'a', nodes: 3, multiNetworkPolicy: true }, { name: 'b', nodes: 3, multiNetworkPolicy: true }, { name: 'c', nodes: 2 }],
  }],
  ['namespaced Issuer', { gateway: { tls: { issuerRef: { name: 'fleet-ca', kind: 'Issuer' } } } }],
  ['user Secret', { gateway: { tls: { secretName: 'gw-certs' }, replicas: 3 } }],
  ['plaintext', { gateway: { tls: { plaintext: true }, replicas: 1 }, trust: { exchange: { enabled: false } } }],
];

describe.each(variants)('gateway objects validate against upstream schemas: %s', (_name, overrides) => {
  const r = synthesizeFleet(baseFleet(overrides));
  const objs = [...r.objects.values()].flat().filter((o) => gatewayKinds.has(o.kind) && (o.metadata.namespace === 'migration-mesh' || o.kind === 'Namespace'));

  test('every gateway object passes (types, enums, required, unknown fields)', () => {
    expect(objs.length).toBeGreaterThan(0);
    const errors = objs.flatMap((o) => validateObject(o).map((e) => `${o.kind}/${o.metadata.name}: ${e}`));
    expect(errors).toEqual([]);
  });
});

describe('schema sources for the gateway kinds', () => {
  test('Certificate and MultiNetworkPolicy are checked against the vendored upstream CRDs, not typings', () => {
    expect(describeSchema('cert-manager.io/v1', 'Certificate')).toMatchObject({ flavour: 'crd', origin: expect.stringMatching(/cert-manager\.io_certificates\.yaml$/) });
    expect(describeSchema('k8s.cni.cncf.io/v1beta1', 'MultiNetworkPolicy')).toMatchObject({ flavour: 'crd', origin: expect.stringMatching(/multi-networkpolicies/) });
  });

  test('every gateway kind has a schema (none is accepted unschematized)', () => {
    for (const [apiVersion, kind] of [['apps/v1', 'Deployment'], ['v1', 'Service'], ['v1', 'ServiceAccount'], ['policy/v1', 'PodDisruptionBudget'], ['v1', 'ConfigMap'], ['monitoring.coreos.com/v1', 'ServiceMonitor']]) {
      expect({ apiVersion, kind, has: describeSchema(apiVersion, kind) !== undefined }).toEqual({ apiVersion, kind, has: true });
    }
  });

  test('the schemas bite: a misspelled or mistyped gateway field is reported', () => {
    const r = synthesizeFleet(baseFleet({ gateway: { serviceMonitor: true } }));
    const objs = r.objects.get('a')!;
    const cert = JSON.parse(JSON.stringify(objs.find((o) => o.kind === 'Certificate')));
    cert.spec.privateKey.algorithm = 'DSA';
    cert.spec.uri = cert.spec.uris;
    expect(validateObject(cert).join('\n')).toMatch(/algorithm|DSA/);
    expect(validateObject(cert).join('\n')).toMatch(/uri\b/);
    const dep = JSON.parse(JSON.stringify(objs.find((o) => o.kind === 'Deployment')));
    dep.spec.template.spec.initContainers[0].securityContext.capabilites = { add: ['NET_ADMIN'] };
    expect(validateObject(dep).join('\n')).toMatch(/capabilites/);
    const mnp = JSON.parse(JSON.stringify(baseFleetPolicy()));
    mnp.spec.ingress[0].ports[0].portt = 15443; // the upstream CRD types protocol as a free string: check unknown fields
    mnp.spec.ingress[0].from[0].ipBlock.cidr = 42;
    const errs = validateObject(mnp).join('\n');
    expect(errs).toMatch(/portt/);
    expect(errs).toMatch(/cidr/);
  });
});

function baseFleetPolicy(): any {
  const r = synthesizeFleet(baseFleet({ clusters: [{ name: 'a', nodes: 3, multiNetworkPolicy: true }, { name: 'b', nodes: 3 }] }));
  return r.objects.get('a')!.find((o) => o.kind === 'MultiNetworkPolicy');
}
