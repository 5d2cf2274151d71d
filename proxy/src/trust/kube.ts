/**
 * The four ConfigMap calls the trust container makes, through `@kubernetes/client-node`: GET and PUT
 * (with resourceVersion: 409 on a stale one) of `kubevirt-external-ca`, LIST + WATCH of `kubevirt-ca`
 * narrowed by `fieldSelector=metadata.name=...` (RBAC resourceNames allow list/watch only that way).
 */
import * as k8s from '@kubernetes/client-node';

export interface ConfigMapState { data: Record<string, string>; resourceVersion: string }

export type WatchEvent = { type: 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK'; object: { metadata?: { resourceVersion?: string }; data?: Record<string, string> } }
  | { type: 'ERROR'; object: { code?: number; message?: string } };

export interface ConfigMapApi {
  get(name: string): Promise<ConfigMapState | undefined>;
  /** Replace `data` if the object is still at `resourceVersion`; 'conflict' on 409. */
  replace(name: string, data: Record<string, string>, resourceVersion: string): Promise<'ok' | 'conflict'>;
  /** LIST narrowed to one name: its state (or undefined) and the list's resourceVersion to watch from. */
  list(name: string): Promise<{ item?: ConfigMapState; resourceVersion: string }>;
  /** WATCH from `resourceVersion`; `done` when the stream ends (error or not). Returns a stop function. */
  watch(name: string, resourceVersion: string, onEvent: (e: WatchEvent) => void, done: (err?: unknown) => void): Promise<() => void>;
}

const codeOf = (e: unknown): number | undefined => (e as { code?: number }).code;

export function kubeConfigMaps(kc: k8s.KubeConfig, namespace: string): ConfigMapApi {
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const toState = (cm: k8s.V1ConfigMap): ConfigMapState => ({ data: { ...(cm.data ?? {}) }, resourceVersion: cm.metadata?.resourceVersion ?? '' });
  return {
    async get(name) {
      try { return toState(await core.readNamespacedConfigMap({ name, namespace })); } catch (e) {
        if (codeOf(e) === 404) return undefined;
        throw e;
      }
    },
    async replace(name, data, resourceVersion) {
      const body: k8s.V1ConfigMap = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace, resourceVersion }, data };
      try { await core.replaceNamespacedConfigMap({ name, namespace, body }); return 'ok'; } catch (e) {
        if (codeOf(e) === 409) return 'conflict';
        throw e;
      }
    },
    async list(name) {
      const l = await core.listNamespacedConfigMap({ namespace, fieldSelector: `metadata.name=${name}` });
      const item = l.items.find((x) => x.metadata?.name === name);
      return { item: item && toState(item), resourceVersion: l.metadata?.resourceVersion ?? '' };
    },
    async watch(name, resourceVersion, onEvent, done) {
      const w = new k8s.Watch(kc);
      const req = await w.watch(`/api/v1/namespaces/${namespace}/configmaps`,
        { fieldSelector: `metadata.name=${name}`, resourceVersion, allowWatchBookmarks: true },
        (type: string, object: unknown) => onEvent({ type, object } as WatchEvent), (err: unknown) => done(err));
      return () => req.abort();
    },
  };
}
