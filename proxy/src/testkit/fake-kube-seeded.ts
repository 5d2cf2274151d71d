/**
 * Test support for `migration-mesh status` (issue 28): the read-only side of the fake API server
 * (fake-kube.ts). It holds objects of any kind seeded by a test (any namespace, or cluster-scoped) and
 * serves discovery for their group/versions and for those named by `serveKinds()` (a kind served with no
 * object answers 404 NotFound, as for a CRD that is installed):
 *   GET /api/v1, /apis/GROUP/VERSION                                  APIResourceList (name, kind, namespaced, verbs)
 *   GET /api/v1/namespaces/NS/PLURAL/NAME, /apis/G/V/namespaces/NS/PLURAL/NAME, /api(s)/.../PLURAL/NAME
 * Not for these: lists, watches, writes, field/label selectors, subresources (status, scale, the pod
 * proxy), /apis group discovery, aggregated discovery, OpenAPI. FakeClusterApi (fake-kube-cluster.ts)
 * adds lists with label selectors and the pod proxy. Plurals are the lower-case kind + "s"
 * (a client must take them from discovery, as client-node's KubernetesObjectApi does).
 */

/** A kube-apiserver `Status` body for a failed call. */
export const kubeStatus = (code: number, reason: string, message: string) => ({ kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason, code });

type KindInfo = { plural: string; namespaced: boolean };

export class SeededObjects {
  private readonly extra = new Map<string, unknown>();
  /** Kinds served by discovery, per apiVersion. */
  readonly kinds = new Map<string, Map<string, KindInfo>>();

  /** `nextRv`: the server's resourceVersion counter (one for all its objects, as etcd's revision); `onGet`: a GET answered here. */
  constructor(private readonly nextRv: () => number, private readonly onGet: () => void) {}

  /** Serve discovery for these kinds (apiVersion, kind, namespaced) even with no object of theirs. */
  serveKinds(kinds: { apiVersion: string; kind: string; namespaced?: boolean }[]): void {
    for (const k of kinds) this.kindInfo(k.apiVersion, k.kind, k.namespaced ?? true);
  }

  private kindInfo(apiVersion: string, kind: string, namespaced: boolean): KindInfo {
    const gv = this.kinds.get(apiVersion) ?? new Map<string, KindInfo>();
    this.kinds.set(apiVersion, gv);
    const info = gv.get(kind) ?? { plural: `${kind.toLowerCase()}s`, namespaced };
    gv.set(kind, info);
    return info;
  }

  /** Add or replace a read-only object of any kind. */
  seed(obj: { apiVersion: string; kind: string; metadata: { name: string; namespace?: string } }, namespaced: boolean): void {
    const info = this.kindInfo(obj.apiVersion, obj.kind, namespaced);
    const stored = JSON.parse(JSON.stringify({ ...obj, metadata: { resourceVersion: String(this.nextRv()), ...obj.metadata } }));
    this.extra.set(this.pathOf(obj.apiVersion, info.plural, obj.metadata.name, obj.metadata.namespace), stored);
  }

  /** Forget a seeded object. */
  unseed(apiVersion: string, kind: string, name: string, namespace?: string): void {
    const info = this.kinds.get(apiVersion)?.get(kind);
    if (info) this.extra.delete(this.pathOf(apiVersion, info.plural, name, namespace));
  }

  private pathOf(apiVersion: string, plural: string, name: string, namespace?: string): string {
    return `/${apiVersion.includes('/') ? 'apis' : 'api'}/${apiVersion}${namespace ? `/namespaces/${namespace}` : ''}/${plural}/${name}`.toLowerCase();
  }

  /** Discovery and seeded objects; undefined: not one of these paths. ConfigMaps of `writable` (the server's own namespace) are not served here. */
  serve(pathname: string, writable: string): { code: number; body: unknown } | undefined {
    const gv = /^\/api\/v1$/.test(pathname) ? 'v1' : /^\/apis\/([^/]+\/[^/]+)$/.exec(pathname)?.[1];
    if (gv !== undefined) {
      const kinds = new Map(this.kinds.get(gv) ?? []);
      if (gv === 'v1') kinds.set('ConfigMap', { plural: 'configmaps', namespaced: true });
      if (kinds.size === 0) return { code: 404, body: kubeStatus(404, 'NotFound', 'the server could not find the requested resource') };
      return {
        code: 200,
        body: { kind: 'APIResourceList', apiVersion: 'v1', groupVersion: gv, resources: [...kinds].map(([kind, i]) => ({ name: i.plural, singularName: kind.toLowerCase(), namespaced: i.namespaced, kind, verbs: ['get'] })) },
      };
    }
    const key = pathname.toLowerCase();
    if (this.extra.has(key)) { this.onGet(); return { code: 200, body: this.extra.get(key) }; }
    for (const [apiVersion, kinds] of this.kinds) {
      for (const [kind, i] of kinds) {
        const prefix = `/${apiVersion.includes('/') ? 'apis' : 'api'}/${apiVersion}/`.toLowerCase();
        if (key.startsWith(prefix) && key.split('/').slice(-2, -1)[0] === i.plural && !(kind === 'ConfigMap' && key.includes(`/namespaces/${writable}/`))) {
          this.onGet();
          return { code: 404, body: kubeStatus(404, 'NotFound', `${i.plural} "${key.split('/').pop()}" not found`) };
        }
      }
    }
    return undefined;
  }
}
