/**
 * Quantities in the API server's canonical form: the real kube-apiserver is the judge. Every case is written
 * into a Pod's container resources on a real API server and read back; canonicalQuantity must give the same text.
 */
import { canonicalQuantity, canonicalizeWorkloadQuantities } from '../src/base/quantity';
import { RealFleet } from './support/real-kube';

const CASES = [
  '1024Mi', '1Gi', '1536Mi', '512Ki', '0.5Gi', '1.5Ki', '1000Ki', '2048', '1023Ki', '64Mi', '16Mi', '1048576Ki',
  '1000m', '1500m', '0.5', '500m', '1', '10m', '1000k', '1M', '1200M', '0.1', '100', '2000', '1e3', '1.5e3', '12e6',
  '0', '0Mi', '0m', '1n', '1000n', '1u', '100u', '0.000001', '3000G', '1000000000', '2.5Gi', '1Ei', '1024Pi',
];

describe('canonicalQuantity', () => {
  let real: RealFleet;
  beforeAll(async () => { real = await RealFleet.start(['q']); }, 120_000);
  afterAll(async () => { await real?.stop(); });

  test('every case reads back from a real API server as canonicalQuantity writes it', () => {
    const q = real.cluster('q');
    q.kubectl(['create', 'namespace', 'quantities']);
    const containers = CASES.map((v, i) => ({ name: `c${i}`, image: 'x', resources: { requests: { memory: v, cpu: v } } }));
    const pod = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'q', namespace: 'quantities' }, spec: { containers } };
    const live = JSON.parse(q.kubectl(['create', '-o', 'json', '-f', '-'], { input: JSON.stringify(pod) })) as typeof pod;
    const server = live.spec.containers.map((c) => [c.resources.requests.memory, c.resources.requests.cpu]);
    expect(CASES.map((v) => [canonicalQuantity(v, -3), canonicalQuantity(v, -3)])).toEqual(server);
    expect(server[0]).toEqual(['1Gi', '1Gi']); // the case that made GitOps engines see our Deployments drift
  });

  test('outside container resources the API server keeps nano precision', () => {
    expect(['1n', '1000n', '100u', '0.000001', '0.0000000001'].map((v) => canonicalQuantity(v))).toEqual(['1n', '1u', '100u', '1u', '1n']);
  });

  test('text that is not a quantity is left alone', () => {
    expect(canonicalQuantity('lots')).toBe('lots');
    expect(canonicalQuantity('1Gb')).toBe('1Gb');
  });

  test('a Deployment: containers and init containers, requests and limits', () => {
    const d = {
      spec: {
        template: {
          spec: {
            containers: [{ resources: { requests: { memory: '256Mi', cpu: '1000m' }, limits: { memory: '1024Mi' } } }],
            initContainers: [{ resources: { limits: { memory: '2048Mi' } } }],
          },
        },
      },
    };
    expect(canonicalizeWorkloadQuantities(d).spec.template.spec).toEqual({
      containers: [{ resources: { requests: { memory: '256Mi', cpu: '1' }, limits: { memory: '1Gi' } } }],
      initContainers: [{ resources: { limits: { memory: '2Gi' } } }],
    });
  });
});
