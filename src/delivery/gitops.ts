/**
 * GitOps delivery: the Argo CD ApplicationSet and the Flux Kustomizations that apply each cluster's
 * directory, plus the per-object annotations (sync waves, prune protection). Objects only; cli/synthesize-fleet.ts
 * writes them under `<out>/<fleet>/_gitops/`. Pure, no cdk8s import.
 */
import { FleetProblem, FleetValidationError } from '../base/errors';
import { FleetDocument } from '../fleet/schema';
import { Manifest } from './manifest';
import { CLUSTER_LABEL, FLEET_LABEL, STAGE_LABEL, managedByLabels } from '../base/names';
import { STAGES, StageName, isPrimaryNetworkNamespace } from './rollout';
import { parseGoDuration } from '../trust/plan';
import { DELIVERY_KINDS } from '../kubevirt/delivery-forms';

export const GITOPS_DIR = '_gitops';
export const ARGOCD_WAVE_ANNOTATION = 'argocd.argoproj.io/sync-wave';
export const ARGOCD_SYNC_OPTIONS_ANNOTATION = 'argocd.argoproj.io/sync-options';
export const FLUX_PRUNE_ANNOTATION = 'kustomize.toolkit.fluxcd.io/prune';

const GITOPS_DEFAULTS = {
  targetRevision: 'HEAD',
  argocdNamespace: 'argocd',
  argocdProject: 'default',
  fluxNamespace: 'flux-system',
  fluxInterval: '10m',
  fluxTimeout: '5m',
  fluxRetryInterval: '1m',
  sourceKind: 'GitRepository',
} as const;

/** Kinds we deliver as partial objects owned by an operator: never prune or delete them from GitOps. */
const PROTECTED_KINDS = new Set([...DELIVERY_KINDS, 'Setting']); // the delivery forms' kinds (src/kubevirt/delivery-forms.ts), Harvester's Setting

interface ResolvedArgocd {
  readonly namespace: string;
  readonly project: string;
  readonly repoURL: string;
  /** Per-cluster API server, or undefined for `destination.name: <cluster>`. */
  readonly clusterServers?: Readonly<Record<string, string>>;
  readonly automated: boolean;
}

interface ResolvedFlux {
  readonly namespace: string;
  readonly sourceRef: { readonly kind: string; readonly name: string; readonly namespace?: string };
  readonly interval: string;
  readonly timeout: string;
  readonly retryInterval: string;
  /** Kubeconfig Secret per cluster; empty when `inCluster`. */
  readonly kubeConfigSecrets: Readonly<Record<string, string>>;
  readonly inCluster: boolean;
}

export interface ResolvedGitops {
  readonly fleet: string;
  /** The fleet's cluster names, in the fleet's order (problem paths name `spec.clusters[i]`). */
  readonly clusters: readonly string[];
  readonly targetRevision: string;
  /** Repository path of the fleet's output directory, without `./` or a trailing `/`. */
  readonly path: string;
  readonly argocd?: ResolvedArgocd;
  readonly flux?: ResolvedFlux;
}

/** Defaults applied, cross-references checked (every problem, with path and fix). */
export function resolveGitops(doc: FleetDocument): { gitops?: ResolvedGitops; problems: FleetProblem[] } {
  const g = doc.spec.gitops;
  const problems: FleetProblem[] = [];
  if (!g) return { problems };
  const names = doc.spec.clusters.map((c) => c.name);
  const known = new Set(names);
  const P = 'spec.gitops';
  const path = (g.path ?? `dist/${doc.metadata.name}`).replace(/^\.\//, '').replace(/\/+$/, '');
  if (path.startsWith('/') || path.split('/').includes('..')) {
    problems.push({ code: 'gitops-path', path: `${P}.path`, message: `'${g.path}' must be a path inside the repository`, fix: `use a relative path such as dist/${doc.metadata.name}` });
  }
  let argocd: ResolvedArgocd | undefined;
  if (g.argocd) {
    const a = g.argocd;
    if (!g.repoURL) problems.push({ code: 'gitops-repo-missing', path: `${P}.repoURL`, message: 'Argo CD needs the Git repository that holds the synthesized tree', fix: 'add spec.gitops.repoURL, e.g. https://git.example.com/infra.git' });
    if (a.clusterServers) {
      for (const k of Object.keys(a.clusterServers)) {
        if (!known.has(k)) problems.push({ code: 'gitops-unknown-cluster', path: `${P}.argocd.clusterServers.${k}`, message: `'${k}' is not a cluster of the fleet`, fix: `remove it, or use one of ${names.join(', ')}` });
      }
      const missing = names.filter((n) => !(n in a.clusterServers!));
      if (missing.length) {
        problems.push({ code: 'gitops-server-missing', path: `${P}.argocd.clusterServers`, message: `lists no API server for ${missing.join(', ')}; every Application needs one destination`, fix: 'add an entry for each of them, or drop clusterServers to address clusters by their Argo CD name (= fleet cluster name)' });
      }
    }
    argocd = {
      namespace: a.namespace ?? GITOPS_DEFAULTS.argocdNamespace,
      project: a.project ?? GITOPS_DEFAULTS.argocdProject,
      repoURL: g.repoURL ?? '',
      clusterServers: a.clusterServers,
      automated: a.automated ?? true,
    };
  }
  let flux: ResolvedFlux | undefined;
  if (g.flux) {
    const f = g.flux;
    const ns = f.namespace ?? GITOPS_DEFAULTS.fluxNamespace;
    for (const k of Object.keys(f.kubeConfigSecrets ?? {})) {
      if (!known.has(k)) problems.push({ code: 'gitops-unknown-cluster', path: `${P}.flux.kubeConfigSecrets.${k}`, message: `'${k}' is not a cluster of the fleet`, fix: `remove it, or use one of ${names.join(', ')}` });
    }
    if (f.inCluster && f.kubeConfigSecrets) {
      problems.push({ code: 'gitops-conflict', path: `${P}.flux.kubeConfigSecrets`, message: 'is given together with inCluster: true; in-cluster Kustomizations use no kubeconfig', fix: 'remove one of the two' });
    }
    problems.push(...fluxDurationProblems(f));
    const secrets: Record<string, string> = {};
    if (!f.inCluster) for (const n of [...names].sort()) secrets[n] = f.kubeConfigSecrets?.[n] ?? `${n}-kubeconfig`;
    flux = {
      namespace: ns,
      sourceRef: {
        kind: f.sourceRef.kind ?? GITOPS_DEFAULTS.sourceKind, name: f.sourceRef.name, ...(f.sourceRef.namespace ? { namespace: f.sourceRef.namespace } : {}),
      },
      interval: f.interval ?? GITOPS_DEFAULTS.fluxInterval,
      timeout: f.timeout ?? GITOPS_DEFAULTS.fluxTimeout,
      retryInterval: f.retryInterval ?? GITOPS_DEFAULTS.fluxRetryInterval,
      kubeConfigSecrets: secrets,
      inCluster: f.inCluster ?? false,
    };
  }
  // here only what every run generates: each cluster's Application, and each cluster's Kustomizations
  // with the shortest stage name (every cluster has at least one stage); fluxKustomizations checks the
  // names of the stages really generated
  const fleet = doc.metadata.name;
  const shortest = STAGES.reduce((a, st) => (st.name.length < a.length ? st.name : a), STAGES[0].name);
  names.forEach((c, i) => {
    const where = { path: `spec.clusters[${i}].name`, shorten: `metadata.name '${fleet}' or cluster name '${c}'` };
    if (argocd) problems.push(...nameTooLong('argocd', `${fleet}-${c}`, where));
    if (flux) problems.push(...nameTooLong('flux', fluxKustomizationName(fleet, c, shortest), where));
  });
  return { gitops: { fleet, clusters: names, targetRevision: g.targetRevision ?? GITOPS_DEFAULTS.targetRevision, path, argocd, flux }, problems };
}

/**
 * Argo CD's label tracking puts the Application name in a label value, Flux labels every applied object
 * with its Kustomization name: either over 63 characters is refused by the API server.
 */
export function nameTooLong(kind: 'argocd' | 'flux', name: string, where: { readonly path: string; readonly shorten: string }): FleetProblem[] {
  if (name.length <= 63) return [];
  const [what, why] = kind === 'argocd'
    ? ['Argo CD Application', 'Argo CD\'s label tracking (the default before Argo CD 3.0; `application.resourceTrackingMethod: label` or `annotation+label` since) writes it into app.kubernetes.io/instance']
    : ['Flux Kustomization', 'Flux labels every object it applies with kustomize.toolkit.fluxcd.io/name'];
  return [{
    code: 'gitops-name-too-long', path: where.path,
    message: `the ${what} '${name}' has ${name.length} characters; ${why}, and a label value is at most 63`,
    fix: `shorten ${where.shorten} by ${name.length - 63} characters`,
  }];
}

/** The Flux CRD's pattern for `interval`, `timeout` (and `retryInterval`): kustomization_types.go. */
const FLUX_DURATION = /^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$/;

/**
 * `interval`, `timeout` and `retryInterval` as Flux takes them: the CRD's pattern (the API server refuses anything else,
 * even a valid Go duration such as `90us`), then Go's `time.ParseDuration` range (the controller could
 * not decode a longer one), and positive.
 */
function fluxDurationProblems(f: NonNullable<NonNullable<FleetDocument['spec']['gitops']>['flux']>): FleetProblem[] {
  const out: FleetProblem[] = [];
  const fields = [['interval', GITOPS_DEFAULTS.fluxInterval], ['timeout', GITOPS_DEFAULTS.fluxTimeout], ['retryInterval', GITOPS_DEFAULTS.fluxRetryInterval]] as const;
  for (const [field, def] of fields) {
    const text = f[field];
    if (text === undefined) continue;
    const seconds = parseGoDuration(text);
    const message = !FLUX_DURATION.test(text)
      ? (seconds !== undefined
        ? `'${text}' is a Go duration, but the Flux CRD refuses it: its pattern takes digits with ms, s, m or h only`
        : `'${text}' is not a Go duration the Flux CRD takes (digits with ms, s, m or h, e.g. 10m or 1h30m)`)
      : seconds === undefined ? `'${text}' is past Go's time.Duration range (at most 2562047h): the Flux controller could not decode it`
        : seconds === 0 ? `'${text}' is zero; a Flux ${field} must be positive` : undefined;
    if (message) out.push({ code: 'gitops-duration', path: `spec.gitops.flux.${field}`, message, fix: `write it like ${def} or 1h30m, or leave it out for ${def}` });
  }
  return out;
}

/**
 * Never pruned or deleted by GitOps: the operators' partial objects (deleting a KubeVirt CR uninstalls KubeVirt),
 * and the namespaces of primary VM networks (deleting one deletes every VM in it; a VM network dropped from the
 * fleet must not take its tenants with it).
 */
const isProtected = (o: Manifest): boolean => PROTECTED_KINDS.has(o.kind) || isPrimaryNetworkNamespace(o);

/** Add the GitOps annotations to one synthesized object (returns a copy). */
export function annotateForGitops(o: Manifest, wave: number, g: ResolvedGitops | undefined): Manifest {
  if (!g || (!g.argocd && !g.flux)) return o;
  const annotations: Record<string, string> = { ...(o.metadata?.annotations ?? {}) };
  if (g.argocd) {
    annotations[ARGOCD_WAVE_ANNOTATION] = String(wave);
    // removing a cluster or a file must never delete what isProtected names
    if (isProtected(o)) annotations[ARGOCD_SYNC_OPTIONS_ANNOTATION] = 'Prune=false,Delete=false';
  }
  if (g.flux && isProtected(o)) annotations[FLUX_PRUNE_ANNOTATION] = 'disabled';
  return { ...o, metadata: { ...o.metadata, annotations } };
}

const managedLabels = (fleet: string): Record<string, string> => ({ ...managedByLabels(), [FLEET_LABEL]: fleet });

/** The Argo CD ApplicationSet: one Application per cluster, server-side apply, waves inside. */
export function argocdApplicationSet(g: ResolvedGitops, clusters: readonly string[]): Manifest {
  const a = g.argocd!;
  const byServer = !!a.clusterServers;
  return {
    apiVersion: 'argoproj.io/v1alpha1',
    kind: 'ApplicationSet',
    metadata: { name: `${g.fleet}-migration-mesh`, namespace: a.namespace, labels: managedLabels(g.fleet) },
    spec: {
      goTemplate: true,
      goTemplateOptions: ['missingkey=error'],
      generators: [{
        list: {
          elements: [...clusters].sort().map((c) => ({ cluster: c, path: `${g.path}/${c}`, ...(byServer ? { server: a.clusterServers![c] } : {}) })),
        },
      }],
      // a cluster removed from the fleet loses its Application, not its KubeVirt configuration
      syncPolicy: { preserveResourcesOnDeletion: true },
      template: {
        metadata: { name: `${g.fleet}-{{.cluster}}`, labels: { ...managedLabels(g.fleet), [CLUSTER_LABEL]: '{{.cluster}}' } },
        spec: {
          project: a.project,
          source: { repoURL: a.repoURL, targetRevision: g.targetRevision, path: '{{.path}}' },
          destination: byServer ? { server: '{{.server}}' } : { name: '{{.cluster}}' },
          syncPolicy: {
            ...(a.automated ? { automated: { prune: true, selfHeal: true } } : {}),
            // the KubeVirt/HyperConverged objects are partial: only server-side apply leaves the rest to the operator
            syncOptions: ['ServerSideApply=true'],
            retry: { limit: 5, backoff: { duration: '10s', factor: 2, maxDuration: '5m' } },
          },
        },
      },
    },
  };
}

const fluxKustomizationName = (fleet: string, cluster: string, stage: StageName): string => `${fleet}-${cluster}-${stage}`;

/**
 * Flux: per cluster one Kustomization per non-empty stage, chained with dependsOn. The gateway stage
 * waits for its objects to be Ready (Deployments available) before the network stage may start.
 * `deletionPolicy: Orphan`: a Kustomization that goes (its cluster left the fleet) leaves its objects, as the
 * ApplicationSet's preserveResourcesOnDeletion does; Flux's default would delete all but the prune-disabled
 * KubeVirt CR, which would then name a NAD that no longer exists. `prune: true` still removes what a new
 * synth drops from a stage.
 */
export function fluxKustomizations(g: ResolvedGitops, clusters: readonly { name: string; stages: readonly StageName[] }[]): Manifest[] {
  const f = g.flux!;
  const out: Manifest[] = [];
  const tooLong: FleetProblem[] = [];
  for (const c of [...clusters].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
    let prev: string | undefined;
    for (const st of STAGES) {
      if (!c.stages.includes(st.name)) continue;
      const name = fluxKustomizationName(g.fleet, c.name, st.name);
      tooLong.push(...nameTooLong('flux', name, { path: `spec.clusters[${g.clusters.indexOf(c.name)}].name`, shorten: `metadata.name '${g.fleet}' or cluster name '${c.name}'` }));
      out.push({
        apiVersion: 'kustomize.toolkit.fluxcd.io/v1',
        kind: 'Kustomization',
        metadata: { name, namespace: f.namespace, labels: { ...managedLabels(g.fleet), [CLUSTER_LABEL]: c.name, [STAGE_LABEL]: st.name } },
        spec: {
          interval: f.interval,
          timeout: f.timeout,
          retryInterval: f.retryInterval,
          path: `./${g.path}/${c.name}/${st.dir}`,
          prune: true,
          deletionPolicy: 'Orphan',
          wait: st.name === 'gateway',
          sourceRef: f.sourceRef,
          ...(prev ? { dependsOn: [{ name: prev }] } : {}),
          ...(f.inCluster ? {} : { kubeConfig: { secretRef: { name: f.kubeConfigSecrets[c.name] } } }),
        },
      });
      prev = name;
    }
  }
  if (tooLong.length) throw new FleetValidationError(tooLong);
  return out;
}
