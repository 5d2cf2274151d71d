/**
 * The gateway image by digest (issue 49): a fleet can name it `repo@sha256:<digest>` or `repo:tag@sha256:<digest>`,
 * the generated Deployments (gateway, init, failover, trust) carry exactly that, and `validate` warns, without
 * refusing, when a fleet that is not `spec.environment: lab` leaves it named by tag only (its own or the default).
 */
import * as fs from 'fs';
import * as path from 'path';
import * as YAML from 'yaml';
import { synthesizeFleet } from '../cli/synthesize-fleet';
import { gatewayImageWarnings } from '../src/gateway/image-pinning';
import { DEFAULTS } from '../src/fleet/resolved';
import { baseFleet, runCli } from './support/fleets';
import { suiteTmpDir } from './support/tmp';

const DIGEST = `sha256:${'0123456789abcdef'.repeat(4)}`;
const tmp = suiteTmpDir('mm-image-pin-');
const warningsOf = (image?: string, environment?: 'production' | 'lab', datapath?: 'gateway' | 'native' | 'direct') => {
  const doc = baseFleet({ ...(image ? { gateway: { image } } : {}), ...(environment ? { environment } : {}), ...(datapath ? { datapath } : {}) });
  return synthesizeFleet(doc, { render: false }).plan.gateway.warnings ?? [];
};

/** Every container image of every generated object that runs the gateway image. */
function imagesInOutput(image: string): string[] {
  const r = synthesizeFleet(baseFleet({ gateway: { image } }));
  return [...r.objects.values()].flat().flatMap((o: any) => {
    const pod = o.spec?.template?.spec;
    return pod ? [...(pod.initContainers ?? []), ...pod.containers].map((c: any) => `${o.kind}/${o.metadata.name}/${c.name}=${c.image}`) : [];
  });
}

describe('gateway image named by digest', () => {
  test.each([`registry.example.com:5000/mm/proxy@${DIGEST}`, `ghcr.io/migration-mesh/proxy:0.1.0@${DIGEST}`])('%s is accepted and every gateway container runs exactly it', (image) => {
    const images = imagesInOutput(image);
    const gatewayish = images.filter((i) => /migration-mesh-gateway|trust/.test(i));
    expect(gatewayish.length).toBeGreaterThanOrEqual(4); // per cluster: setup-rules init, gateway, failover, trust
    for (const i of gatewayish) expect(i.slice(i.indexOf('=') + 1)).toBe(image);
    expect(warningsOf(image)).toEqual([]);
  });

  test('a tag-only image is a warning naming the field, the image, the clusters and how to get the digest', () => {
    const [w, ...rest] = warningsOf('ghcr.io/acme/proxy:1.2.3');
    expect(rest).toEqual([]);
    expect(w).toMatchObject({ code: 'gateway-image-tag-only', path: 'spec.gateway.image' });
    expect(w.message).toContain("spec.gateway.image 'ghcr.io/acme/proxy:1.2.3' names the gateway image by tag only");
    expect(w.message).toContain('of a, b');
    expect(w.fix).toContain(`image: ghcr.io/acme/proxy:1.2.3@sha256:<digest>`);
    expect(w.fix).toContain("skopeo inspect --format '{{.Digest}}' docker://ghcr.io/acme/proxy:1.2.3");
    expect(w.fix).toContain('crane digest ghcr.io/acme/proxy:1.2.3');
    expect(w.fix).toContain('docker buildx imagetools inspect');
    expect(w.fix).toContain('spec.environment: lab');
  });

  test('the default image is a tag too: the warning says it was not set', () => {
    const [w] = warningsOf();
    expect(w.code).toBe('gateway-image-tag-only');
    expect(w.message).toContain(`spec.gateway.image is not set, so the default '${DEFAULTS.gatewayImage}'`);
  });

  test('a lab fleet is not warned; production (explicit or default) is', () => {
    expect(warningsOf('ghcr.io/acme/proxy:1.2.3', 'lab')).toEqual([]);
    expect(warningsOf(undefined, 'lab')).toEqual([]);
    expect(warningsOf('ghcr.io/acme/proxy:1.2.3', 'production').map((w) => w.code)).toEqual(['gateway-image-tag-only']);
  });

  test('no cluster that runs the image: no warning; direct clusters exchanging CAs through trust agents (the gateway image) are warned', () => {
    expect(gatewayImageWarnings({ image: 'a/b:1', given: true, environment: 'production', clusters: [] })).toEqual([]);
    expect(gatewayImageWarnings({ image: 'a/b:1', given: true, environment: 'production', clusters: ['x', 'y', 'z', 'w', 'v'] })[0].message).toContain('x, y, z and 2 more');
    // direct clusters exchange CAs through trust agents, which run the gateway image
    expect(warningsOf('ghcr.io/acme/proxy:1.2.3', undefined, 'direct').map((w) => w.code)).toEqual(['gateway-image-tag-only']);
  });

  test('validate prints it as a warning and still exits 0; --output json lists it under warnings', () => {
    const file = path.join(tmp, 'tagged.fleet.yaml');
    fs.writeFileSync(file, YAML.stringify(baseFleet({ gateway: { image: 'ghcr.io/acme/proxy:1.2.3' } })));
    const text = runCli(['validate', file]);
    expect(text.code).toBe(0);
    expect(text.out).toMatch(/: valid\n {2}warning: .*gateway-image-tag-only.*spec\.gateway\.image/);
    const json = runCli(['validate', file, '--output', 'json']);
    expect(json.code).toBe(0);
    expect(JSON.parse(json.out)[0].warnings.map((w: { code: string }) => w.code)).toEqual(['gateway-image-tag-only']);
    const pinned = path.join(tmp, 'pinned.fleet.yaml');
    fs.writeFileSync(pinned, YAML.stringify(baseFleet({ gateway: { image: `ghcr.io/acme/proxy:1.2.3@${DIGEST}` } })));
    expect(runCli(['validate', pinned]).out).toBe(`${pinned}: valid\n`);
  });

  test('a digest that is not sha256:<64 hex> is still refused (image-invalid), not warned about', () => {
    const file = path.join(tmp, 'bad.fleet.yaml');
    fs.writeFileSync(file, YAML.stringify(baseFleet({ gateway: { image: 'ghcr.io/acme/proxy:1.2.3@sha256:abc' } })));
    const r = runCli(['validate', file]);
    expect(r.code).toBe(1);
    expect(r.err).toContain('image-invalid');
  });
});
