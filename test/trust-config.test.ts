/**
 * `spec.trust`: the KubeVirt CA rotation emitted per cluster in every delivery form, and the rules it is
 * checked against (KubeVirt's webhook, HCO's webhook, ours), each with a stable code.
 */
import { resolveFleet } from '../src/fleet/resolve';
import { parseFleetDocument } from '../src/fleet/load';
import { planFleet } from '../src/addressing/planner';
import { synthesizeFleet } from '../cli/synthesize-fleet';
import { formatGoDuration, parseGoDuration } from '../src/trust/plan';
import { validateObject } from './support/schemas';
import { baseFleet, mutate, problemsOf } from './support/fleets';


const codes = (doc: unknown) => problemsOf(doc).map((p) => `${p.code} @ ${p.path}`);

describe('Go durations', () => {
  test.each([['168h', 604800], ['1h30m', 5400], ['4h48m0s', 17280], ['90s', 90], ['1.5h', 5400], ['500ms', 0.5]])('%s = %d s', (t, s) => {
    expect(parseGoDuration(t)).toBe(s);
  });
  test.each(['', 'h', '168', '1d', '1h x', '-1h'])('%p is refused', (t) => expect(parseGoDuration(t)).toBeUndefined());
  test('formatted as Go prints them', () => {
    expect([604800, 345600, 17280, 90, 600].map(formatGoDuration)).toEqual(['168h0m0s', '96h0m0s', '4h48m0s', '1m30s', '10m0s']);
  });
});

describe('rotation emitted per cluster', () => {
  test('no spec.trust: on by default for the gateway clusters (same output as spec.trust: {}), since KubeVirt\'s migration TLS is on', () => {
    const dflt = synthesizeFleet(baseFleet());
    const explicit = synthesizeFleet(baseFleet({ trust: {} }));
    expect([...dflt.files.entries()]).toEqual([...explicit.files.entries()]);
    const kv = dflt.objects.get('a')!.find((o) => o.kind === 'KubeVirt');
    expect(kv.spec.certificateRotateStrategy.selfSigned.ca).toEqual({ duration: '168h0m0s', renewBefore: '96h0m0s' });
  });

  test('migration TLS off (disableTLS) keeps the default: KubeVirt\'s sync channel is mutual TLS regardless (fact sheet s.2.4), so peers must still trust each other\'s CA', () => {
    const objs = synthesizeFleet(baseFleet({ migrationPolicy: { disableTLS: true }, gateway: { payload: 'tls' } })).objects.get('a')!;
    expect(objs.find((o) => o.kind === 'KubeVirt').spec.certificateRotateStrategy.selfSigned.ca).toEqual({ duration: '168h0m0s', renewBefore: '96h0m0s' });
    expect(objs.filter((o) => o.kind === 'Deployment').flatMap((d) => d.spec.template.spec.containers.map((c: any) => c.name))).toContain('trust');
  });

  test('the opt-out (spec.trust.enabled: false) or a single cluster: nothing is emitted', () => {
    const kvOf = (doc: Parameters<typeof synthesizeFleet>[0]) => synthesizeFleet(doc).objects.get('a')!;
    for (const objs of [
      kvOf(baseFleet({ trust: { enabled: false } })),
      kvOf(baseFleet({ trust: { enabled: false, rotation: { ca: { duration: '240h' } } } })),
      kvOf(baseFleet({ clusters: [{ name: 'a', nodes: 3 }] })),
    ]) {
      expect(objs.find((o) => o.kind === 'KubeVirt').spec.certificateRotateStrategy).toBeUndefined();
      expect(objs.some((o) => o.kind === 'Role')).toBe(false);
      expect(objs.filter((o) => o.kind === 'Deployment').flatMap((d) => d.spec.template.spec.containers.map((c: any) => c.name))).not.toContain('trust');
    }
  });

  test('by default (issue #30) a direct cluster beside the gateway clusters exchanges too, through a trust agent, and gets the rotation', () => {
    const doc = baseFleet({ clusters: [{ name: 'a', nodes: 3 }, { name: 'b', nodes: 3, datapath: 'direct' }] });
    const plan = planFleet(resolveFleet(parseFleetDocument(doc))).plan;
    expect(plan.trust.clusters).toMatchObject({ a: { exchange: true, agent: false }, b: { exchange: true, agent: true } });
    const b = synthesizeFleet(doc).objects.get('b')!;
    expect(b.find((o) => o.kind === 'KubeVirt').spec.certificateRotateStrategy).toBeDefined();
    expect(b.filter((o) => o.kind === 'Deployment').map((d) => d.metadata.name)).toEqual(['migration-mesh-trust-0', 'migration-mesh-trust-1']);
  });

  test('defaults: CA 168h/96h (renewBefore >= duration/2), server 24h/12h, JSON key certificateRotateStrategy', () => {
    const r = synthesizeFleet(baseFleet({ trust: {} }));
    for (const c of ['a', 'b']) {
      const kv = r.objects.get(c)!.find((o) => o.kind === 'KubeVirt');
      expect(kv.spec.certificateRotateStrategy).toEqual({
        selfSigned: { ca: { duration: '168h0m0s', renewBefore: '96h0m0s' }, server: { duration: '24h0m0s', renewBefore: '12h0m0s' } },
      });
      expect(validateObject(kv)).toEqual([]);
    }
  });

  test('fleet setting, per-cluster override, and renewBefore defaulting to half the given duration', () => {
    const r = synthesizeFleet(baseFleet({
      trust: { rotation: { ca: { duration: '240h' } }, clusters: { b: { ca: { duration: '480h', renewBefore: '360h' }, server: { duration: '12h', renewBefore: '6h' } } } },
    }));
    const ss = (c: string) => r.objects.get(c)!.find((o) => o.kind === 'KubeVirt').spec.certificateRotateStrategy.selfSigned;
    expect(ss('a').ca).toEqual({ duration: '240h0m0s', renewBefore: '120h0m0s' });
    expect(ss('b')).toEqual({ ca: { duration: '480h0m0s', renewBefore: '360h0m0s' }, server: { duration: '12h0m0s', renewBefore: '6h0m0s' } });
  });

  test('kustomize-patch delivery: the same fields in the patch', () => {
    const r = synthesizeFleet(baseFleet({ trust: {}, kubevirt: { configDelivery: 'kustomize-patch' } }));
    const patch = r.files.get('a/components/kubevirt/kubevirt-patch.yaml')!;
    expect(patch).toMatch(/certificateRotateStrategy:\n\s+selfSigned:\n\s+ca:\n\s+duration: 168h0m0s\n\s+renewBefore: 96h0m0s/);
  });

  test('HCO delivery: spec.certConfig (HCO copies it into KubeVirt and would overwrite a jsonpatch), not the jsonpatch', () => {
    const r = synthesizeFleet(baseFleet({ trust: {}, kubevirt: { configDelivery: 'hco' } }));
    const hco = r.objects.get('a')!.find((o) => o.kind === 'HyperConverged');
    expect(hco.spec.certConfig).toEqual({ ca: { duration: '168h0m0s', renewBefore: '96h0m0s' }, server: { duration: '24h0m0s', renewBefore: '12h0m0s' } });
    expect(hco.metadata.annotations['kubevirt.kubevirt.io/jsonpatch']).not.toMatch(/certificateRotateStrategy/);
    expect(validateObject(hco)).toEqual([]);
  });

  test('exchange runs in every datapath: gateway clusters in their gateway, a native/direct cluster in a trust agent', () => {
    const plan = planFleet(resolveFleet(parseFleetDocument(baseFleet({ trust: {}, clusters: [{ name: 'a', nodes: 3 }, { name: 'b', nodes: 3 }, { name: 'c', nodes: 2, datapath: 'direct' }] })))).plan;
    expect(Object.fromEntries(Object.entries(plan.trust.clusters).map(([k, v]) => [k, [v.exchange, v.agent]])))
      .toEqual({ a: [true, false], b: [true, false], c: [true, true] });
  });
});

describe('rules, with stable codes', () => {
  test('the upstream defaults (168h/33.6h) are refused: a pushed peer CA would be dropped 75% of the time', () => {
    const ps = problemsOf(baseFleet({ trust: { rotation: { ca: { duration: '168h', renewBefore: '33h36m' } } } }));
    expect(ps).toHaveLength(1);
    expect(ps[0]).toMatchObject({ code: 'trust/ca-overlap-too-short', path: 'spec.trust.rotation.ca.renewBefore' });
    expect(ps[0].message).toMatch(/75% of each CA's life/);
    expect(ps[0].fix).toMatch(/at least 84h/);
  });

  test("KubeVirt's webhook rules: renewBefore <= duration, server.duration <= ca.duration", () => {
    expect(codes(baseFleet({ trust: { rotation: { ca: { duration: '24h', renewBefore: '30h' }, server: { duration: '48h', renewBefore: '50h' } } } }))).toEqual(expect.arrayContaining([
      'trust/kubevirt-ca-renew-exceeds-duration @ spec.trust.rotation.ca.renewBefore',
      'trust/kubevirt-server-renew-exceeds-duration @ spec.trust.rotation.server.renewBefore',
      'trust/kubevirt-server-outlives-ca @ spec.trust.rotation.server.duration',
    ]));
  });

  test("HCO's 10m minimum applies to HCO-delivered clusters only", () => {
    const tiny = { rotation: { ca: { duration: '8m', renewBefore: '5m' }, server: { duration: '4m', renewBefore: '2m' } }, exchange: { repushInterval: '10s' } };
    expect(codes(baseFleet({ trust: tiny, kubevirt: { configDelivery: 'hco' } })).filter((c) => c.startsWith('trust/hco-below-minimum'))).toHaveLength(4);
    expect(codes(baseFleet({ trust: tiny })).filter((c) => c.startsWith('trust/hco'))).toEqual([]);
  });

  test("ours across clusters: one cluster's overlap shorter than another's rotation period", () => {
    const ps = problemsOf(baseFleet({ trust: { clusters: { a: { ca: { duration: '48h', renewBefore: '24h' } } } } }));
    expect(ps.map((p) => p.code)).toEqual(['trust/peer-rotation-exceeds-overlap']);
    expect(ps[0].path).toBe('spec.trust.clusters.a.ca.renewBefore');
    expect(ps[0].message).toMatch(/cluster b's CA lives 72h before it is replaced/);
  });

  test('the re-push period against the shortest rotation period; unknown cluster names; bad durations', () => {
    expect(codes(baseFleet({ trust: { exchange: { repushInterval: '1h' } } }))).toEqual(['trust/repush-too-slow @ spec.trust.exchange.repushInterval']);
    expect(codes(baseFleet({ trust: { exchange: { repushInterval: '2s' } } }))).toEqual(['trust/repush-too-fast @ spec.trust.exchange.repushInterval']);
    expect(codes(baseFleet({ trust: { clusters: { zz: {} } } }))).toEqual(['trust/unknown-cluster @ spec.trust.clusters.zz']);
    const bad = codes(mutate(baseFleet(), (d) => { d.spec.trust = { rotation: { ca: { duration: '7d' } } }; }));
    expect(bad.join('\n')).toMatch(/spec\.trust\.rotation\.ca\.duration/);
  });

  describe('every fix is an action a person can take: positive numbers that satisfy every rule at once (issue #39)', () => {
    const only = (trust: object) => problemsOf(baseFleet({ trust })).map((p) => ({ code: p.code, path: p.path, fix: p.fix }));
    /** A fix that suggests a negative or zero duration, or a re-push below the 10s the rules allow. */
    const nonsense = /(^|[^\w.])-\d|at most 0s|at most [1-9]s\b/;

    test('renewBefore longer than duration: one problem, with ranges that pass KubeVirt and our overlap rule (not "use at most -12s")', () => {
      const ps = only({ rotation: { ca: { duration: '24h', renewBefore: '24h20m' } } });
      expect(ps).toEqual([{
        code: 'trust/kubevirt-ca-renew-exceeds-duration', path: 'spec.trust.rotation.ca.renewBefore',
        fix: 'lower ca.renewBefore to between 12h and 15h40m, or raise ca.duration to between 32h40m and 48h40m (renewBefore at least half of duration keeps pushed peer CAs; a rotation period, duration - renewBefore, of at least 8h20m leaves room for the 5m repushInterval)',
      }]);
    });

    test('renewBefore equal to duration (a rotation period of 0s): the re-push fix changes the rotation, not "use at most 0s"', () => {
      expect(only({ rotation: { ca: { duration: '24h', renewBefore: '24h' } } })).toEqual([{
        code: 'trust/repush-too-slow', path: 'spec.trust.exchange.repushInterval',
        fix: 'no repushInterval of 10s or more fits a CA rotation period (ca.duration - ca.renewBefore) of 0s: set spec.trust.rotation.ca.renewBefore to 15h40m, so the CA rotation period is 8h20m (100 x the repushInterval of 5m)',
      }]);
    });

    test('a rotation too short for any re-push of 10s or more: both durations raised, not "use at most 6s" (which the 10s minimum refuses)', () => {
      expect(only({ rotation: { ca: { duration: '20m', renewBefore: '10m' }, server: { duration: '20m', renewBefore: '10m' } }, exchange: { repushInterval: '10s' } })).toEqual([{
        code: 'trust/repush-too-slow', path: 'spec.trust.exchange.repushInterval',
        fix: 'no repushInterval of 10s or more fits a CA rotation period (ca.duration - ca.renewBefore) of 10m: set spec.trust.rotation.ca.duration to 33m20s and ca.renewBefore to 16m40s, so the CA rotation period is 16m40s (100 x the repushInterval of 10s)',
      }]);
    });

    test("a peer's overlap shorter than another's rotation, and raising renewBefore alone would pass the cluster's own duration", () => {
      // a: 48h/24h; b (default 168h/96h) rotates every 72h. "raise a's renewBefore to 72h" alone: KubeVirt refuses renewBefore > duration
      expect(only({ clusters: { a: { ca: { duration: '48h', renewBefore: '24h' } } } })).toEqual([{
        code: 'trust/peer-rotation-exceeds-overlap', path: 'spec.trust.clusters.a.ca.renewBefore',
        fix: "raise a's ca.renewBefore to 72h and its ca.duration to 96h (its own rotation period stays 24h), or rotate b more often (its ca.duration - ca.renewBefore at most 24h)",
      }]);
      // where a's duration leaves room, renewBefore alone
      expect(only({ clusters: { a: { ca: { duration: '100h', renewBefore: '50h' } } } })[0].fix)
        .toBe("raise a's ca.renewBefore to at least 72h, or rotate b more often (its ca.duration - ca.renewBefore at most 50h)");
    });

    test('the server certificate: numbers in both directions', () => {
      const ps = only({ rotation: { ca: { duration: '24h', renewBefore: '12h' }, server: { duration: '30h', renewBefore: '40h' } } });
      expect(ps).toEqual(expect.arrayContaining([
        // raising server.duration to 40h would outlive the CA: only the way down
        { code: 'trust/kubevirt-server-renew-exceeds-duration', path: 'spec.trust.rotation.server.renewBefore', fix: 'lower server.renewBefore to at most 24h' },
        { code: 'trust/kubevirt-server-outlives-ca', path: 'spec.trust.rotation.server.duration', fix: 'lower server.duration to at most 24h (ca.duration)' },
      ]));
      expect(only({ rotation: { server: { duration: '24h', renewBefore: '30h' } } })).toEqual([
        { code: 'trust/kubevirt-server-renew-exceeds-duration', path: 'spec.trust.rotation.server.renewBefore', fix: 'lower server.renewBefore to at most 24h, or raise server.duration to between 30h and 168h' },
      ]);
    });

    test.each<[string, object]>([
      ['renewBefore past duration, per cluster', { clusters: { a: { ca: { duration: '10h', renewBefore: '30h' } } } }],
      ['renewBefore past duration, fleet-wide', { rotation: { ca: { duration: '1h', renewBefore: '2h' } } }],
      ['a tiny rotation, default re-push', { rotation: { ca: { duration: '30m', renewBefore: '20m' }, server: { duration: '10m', renewBefore: '5m' } } }],
      ['overlap too short, server renewing past its duration', { rotation: { ca: { duration: '15m', renewBefore: '5m' }, server: { duration: '5m', renewBefore: '6m' } } }],
    ])('%s: no fix suggests a negative, zero or refused number', (_name, trust) => {
      const ps = only(trust);
      expect(ps.length).toBeGreaterThan(0);
      for (const p of ps) expect(`${p.code}: ${p.fix}`).not.toMatch(nonsense);
    });
  });

  test('every problem at once, with the other fleet problems', () => {
    const doc = mutate(baseFleet({ trust: { rotation: { ca: { duration: '168h', renewBefore: '10h' } }, clusters: { nope: {} } } }), (d) => { d.spec.clusters[0].nodes = 0; });
    const all = problemsOf(doc);
    expect(all.map((p) => p.path)).toEqual(expect.arrayContaining(['spec.clusters[0].nodes', 'spec.trust.rotation.ca.renewBefore', 'spec.trust.clusters.nope']));
  });

  test('the formatted error carries the code', () => {
    try {
      planFleet(resolveFleet(parseFleetDocument(baseFleet({ trust: { rotation: { ca: { duration: '168h', renewBefore: '10h' } } } }))));
      throw new Error('expected a validation error');
    } catch (e) {
      expect((e as Error).message).toMatch(/\[trust\/ca-overlap-too-short\]/);
    }
  });
});

describe('the trust container: least privilege, schema-valid', () => {
  const r = synthesizeFleet(baseFleet({ trust: {} }));
  const objs = r.objects.get('a')!;

  test('Role in the KubeVirt namespace limited by resourceNames; RoleBinding to the gateway ServiceAccount', () => {
    const role = objs.find((o) => o.kind === 'Role');
    expect(role.metadata.namespace).toBe('kubevirt');
    expect(role.rules).toEqual([
      { apiGroups: [''], resources: ['configmaps'], resourceNames: ['kubevirt-ca'], verbs: ['get', 'list', 'watch'] },
      { apiGroups: [''], resources: ['configmaps'], resourceNames: ['kubevirt-external-ca'], verbs: ['get', 'update'] },
    ]);
    const rb = objs.find((o) => o.kind === 'RoleBinding');
    expect(rb.subjects).toEqual([{ kind: 'ServiceAccount', name: 'migration-mesh-gateway', namespace: 'migration-mesh' }]);
    expect(rb.roleRef).toEqual({ apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: role.metadata.name });
  });

  test('only the trust container mounts the token; the pod does not automount it; both share the socket directory', () => {
    for (const d of objs.filter((o) => o.kind === 'Deployment')) {
      const pod = d.spec.template.spec;
      expect(pod.automountServiceAccountToken).toBe(false);
      const byName = Object.fromEntries(pod.containers.map((c: any) => [c.name, c]));
      const mounts = (c: any) => c.volumeMounts.map((m: any) => m.name);
      expect(mounts(byName.trust)).toEqual(expect.arrayContaining(['trust-token', 'trust-run']));
      expect(mounts(byName.gateway)).toContain('trust-run');
      for (const c of [...pod.containers, ...pod.initContainers].filter((x: any) => x.name !== 'trust')) expect(mounts(c)).not.toContain('trust-token');
      expect(byName.trust.args).toEqual(['trust', '--config', '/etc/migration-mesh/config.json', '--namespace', 'kubevirt']);
      expect(byName.trust.securityContext).toMatchObject({ runAsNonRoot: true, readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'] } });
      const token = pod.volumes.find((v: any) => v.name === 'trust-token');
      expect(token.projected.sources).toEqual([
        { serviceAccountToken: { path: 'token', expirationSeconds: 3600 } },
        { configMap: { name: 'kube-root-ca.crt', items: [{ key: 'ca.crt', path: 'ca.crt' }] } },
        { downwardAPI: { items: [{ path: 'namespace', fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.namespace' } }] } },
      ]);
    }
  });

  test('the gateway config carries the trust section with the fleet re-push period', () => {
    const cm = objs.find((o) => o.kind === 'ConfigMap' && o.metadata.name === 'migration-mesh-gateway');
    expect(JSON.parse(cm.data['config.json']).trust).toEqual({ socket: '/run/migration-mesh/trust.sock', repushIntervalMs: 300000, retryMs: 1000 });
  });

  test('every object validates against its schema; with spec.trust.enabled: false there is no Role and no trust container', () => {
    const errors = objs.flatMap((o) => validateObject(o).map((e) => `${o.kind}/${o.metadata.name}: ${e}`));
    expect(errors).toEqual([]);
    const plain = synthesizeFleet(baseFleet({ trust: { enabled: false } })).objects.get('a')!;
    expect(plain.some((o) => o.kind === 'Role')).toBe(false);
    expect(plain.filter((o) => o.kind === 'Deployment').flatMap((d) => d.spec.template.spec.containers.map((c: any) => c.name))).not.toContain('trust');
  });
});
