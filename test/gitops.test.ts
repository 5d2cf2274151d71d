/**
 * GitOps delivery: rollout order (one function behind kustomization order, Argo CD waves and Flux
 * stages), the ApplicationSet, the Flux Kustomizations, the staged layout and its validation.
 */
import { spawnSync } from 'child_process';
import * as fs from 'fs';
import * as path from 'path';
import * as YAML from 'yaml';
import { FleetValidationError } from '../src/base/errors';
import { FleetDocument } from '../src/fleet/schema';
import { ARGOCD_WAVE_ANNOTATION, FLUX_PRUNE_ANNOTATION, GITOPS_DIR } from '../src/delivery/gitops';
import { loadFleetFile, loadLedgerFile, ledgerPathFor } from '../src/fleet/load';
import { STAGES, kindWave, kubevirtNadKeys, rolloutWave } from '../src/delivery/rollout';
import { rolloutRank, synthesizeFleet } from '../cli/synthesize-fleet';
import { writeOutputs } from '../cli/write-tree';
import { suiteTmpDir } from './support/tmp';

const EX = path.join(__dirname, '..', 'examples');
const exampleFiles = fs.readdirSync(EX).filter((f) => f.endsWith('.fleet.yaml')).sort();
const load = (f: string): { doc: FleetDocument; synth: ReturnType<typeof synthesizeFleet> } => {
  const file = path.join(EX, f);
  const doc = loadFleetFile(file);
  return { doc, synth: synthesizeFleet(doc, { ledger: loadLedgerFile(ledgerPathFor(file)) }) };
};
const clone = <T>(x: T): T => JSON.parse(JSON.stringify(x));

describe('rollout order', () => {
  test('kind waves: Namespace, gateway NADs, config, Deployments, then KubeVirt last; rolloutRank is the same table', () => {
    expect(kindWave('Namespace')).toBe(0);
    expect(kindWave('NetworkAttachmentDefinition')).toBe(1);
    expect(kindWave('ConfigMap')).toBe(2);
    expect(kindWave('Certificate')).toBe(2);
    expect(kindWave('Deployment')).toBe(3);
    expect(kindWave('KubeVirt')).toBe(5);
    expect(kindWave('HyperConverged')).toBe(5);
    expect(kindWave('Setting')).toBe(5);
    for (const k of ['Namespace', 'NetworkAttachmentDefinition', 'ConfigMap', 'Deployment', 'KubeVirt', 'SomethingNew']) expect(rolloutRank(k)).toBe(kindWave(k));
  });

  test('a NAD KubeVirt names is wave 4: after the gateway Deployments (routes point at the gateway), before KubeVirt', () => {
    const nads = new Set(['kubevirt/lm-migration']);
    expect(rolloutWave({ kind: 'NetworkAttachmentDefinition', metadata: { namespace: 'kubevirt', name: 'lm-migration' } }, nads)).toBe(4);
    expect(rolloutWave({ kind: 'NetworkAttachmentDefinition', metadata: { namespace: 'migration-mesh', name: 'lm-migration-gateway' } }, nads)).toBe(1);
    expect(kindWave('Deployment')).toBeLessThan(4);
    expect(kindWave('KubeVirt')).toBeGreaterThan(4);
  });

  test.each(exampleFiles)('%s: every cluster applies in order (rule 1: NAD before the KubeVirt config naming it; rule 2: gateway objects before the routed NAD)', (f) => {
    const { synth } = load(f);
    for (const c of synth.plan.clusters) {
      const objs = synth.objects.get(c.name)!;
      const nads = kubevirtNadKeys(c);
      const waves = objs.map((o) => rolloutWave(o, nads));
      expect(waves).toEqual([...waves].sort((a, b) => a - b));
      const pos = (pred: (o: any) => boolean): number[] => objs.map((o, i) => (pred(o) ? i : -1)).filter((i) => i >= 0);
      const kv = pos((o) => ['KubeVirt', 'HyperConverged'].includes(o.kind));
      const named = pos((o) => o.kind === 'NetworkAttachmentDefinition' && nads.has(`${o.metadata.namespace}/${o.metadata.name}`));
      const gateway = pos((o) => o.metadata?.namespace === 'migration-mesh' || (o.kind === 'Namespace' && o.metadata.name === 'migration-mesh'));
      for (const k of kv) for (const n of named) expect(n).toBeLessThan(k);
      for (const g of gateway) for (const n of named) expect(g).toBeLessThan(n);
      // the flat kustomization lists the files in the same order
      if (!synth.gitops?.flux) {
        const k = YAML.parse(synth.files.get(`${c.name}/kustomization.yaml`)!);
        const kvName = k.resources.findIndex((r: string) => /^(KubeVirt|HyperConverged)\./.test(r));
        const nadName = k.resources.findIndex((r: string) => r === `NetworkAttachmentDefinition.${c.kubevirt.namespace}.${c.migrationNetwork.nadName}.yaml`);
        if (kvName >= 0 && nadName >= 0) expect(nadName).toBeLessThan(kvName);
      }
    }
  });
});

describe('Argo CD', () => {
  const { doc, synth } = load('gitops.fleet.yaml');
  const appSetFile = [...synth.files.keys()].find((p) => p.startsWith(`${GITOPS_DIR}/argocd/ApplicationSet.`))!;
  const appSet = YAML.parse(synth.files.get(appSetFile)!);

  test('one ApplicationSet, one list element per cluster with its directory and API server', () => {
    expect(appSetFile).toBe('_gitops/argocd/ApplicationSet.argocd.gitops-migration-mesh.yaml');
    expect(appSet.apiVersion).toBe('argoproj.io/v1alpha1');
    expect(appSet.metadata.namespace).toBe('argocd');
    expect(appSet.spec.generators[0].list.elements).toEqual([
      { cluster: 'east', path: 'dist/gitops/east', server: 'https://10.1.0.10:6443' },
      { cluster: 'north', path: 'dist/gitops/north', server: 'https://10.3.0.10:6443' },
      { cluster: 'west', path: 'dist/gitops/west', server: 'https://10.2.0.10:6443' },
    ]);
    for (const e of appSet.spec.generators[0].list.elements) expect(synth.files.has(`${e.path.replace('dist/gitops/', '')}/kustomization.yaml`)).toBe(true);
  });

  test('server-side apply (partial KubeVirt object), project, repo, revision, and no deletion of resources when a cluster leaves', () => {
    const t = appSet.spec.template.spec;
    expect(t.syncPolicy.syncOptions).toContain('ServerSideApply=true');
    expect(t.project).toBe('virtualization');
    expect(t.source).toEqual({ repoURL: 'https://git.example.com/platform/infra.git', targetRevision: 'main', path: '{{.path}}' });
    expect(t.destination).toEqual({ server: '{{.server}}' });
    expect(appSet.spec.syncPolicy.preserveResourcesOnDeletion).toBe(true);
    expect(appSet.spec.goTemplate).toBe(true);
  });

  test('every cluster object carries its sync wave; KubeVirt is protected from prune and delete', () => {
    for (const c of synth.plan.clusters) {
      const nads = kubevirtNadKeys(c);
      for (const o of synth.objects.get(c.name)!) {
        expect(o.metadata.annotations[ARGOCD_WAVE_ANNOTATION]).toBe(String(rolloutWave(o, nads)));
        if (o.kind === 'KubeVirt') {
          expect(o.metadata.annotations['argocd.argoproj.io/sync-options']).toBe('Prune=false,Delete=false');
          expect(o.metadata.annotations[FLUX_PRUNE_ANNOTATION]).toBe('disabled');
        }
      }
    }
  });

  test('without clusterServers the destination is the Argo CD cluster name', () => {
    const d = clone(doc);
    delete (d.spec.gitops as any).argocd.clusterServers;
    const appSet2 = YAML.parse(synthesizeFleet(d).files.get(appSetFile)!);
    expect(appSet2.spec.template.spec.destination).toEqual({ name: '{{.cluster}}' });
    expect(appSet2.spec.generators[0].list.elements[0]).toEqual({ cluster: 'east', path: 'dist/gitops/east' });
  });

  test('fleets without spec.gitops get no annotations and no _gitops directory', () => {
    const { synth: plain } = load('vep-10-clusters.fleet.yaml');
    expect([...plain.files.keys()].some((p) => p.startsWith(GITOPS_DIR))).toBe(false);
    for (const objs of plain.objects.values()) for (const o of objs) expect(o.metadata.annotations?.[ARGOCD_WAVE_ANNOTATION]).toBeUndefined();
  });
});

describe('Flux', () => {
  const { synth } = load('gitops.fleet.yaml');
  const ks = [...synth.files.entries()].filter(([p]) => p.startsWith(`${GITOPS_DIR}/flux/Kustomization.`)).map(([, c]) => YAML.parse(c));

  test('per cluster one Kustomization per stage, chained gateway -> network -> kubevirt; the gateway stage waits for readiness', () => {
    expect(ks).toHaveLength(9);
    for (const cluster of ['east', 'west', 'north']) {
      const mine = ks.filter((k) => k.metadata.labels['migrationmesh.dev/cluster'] === cluster);
      const byStage = Object.fromEntries(mine.map((k) => [k.metadata.labels['migrationmesh.dev/stage'], k]));
      expect(Object.keys(byStage).sort()).toEqual(['gateway', 'kubevirt', 'network']);
      expect(byStage.gateway.spec.dependsOn).toBeUndefined();
      expect(byStage.network.spec.dependsOn).toEqual([{ name: `gitops-${cluster}-gateway` }]);
      expect(byStage.kubevirt.spec.dependsOn).toEqual([{ name: `gitops-${cluster}-network` }]);
      expect(byStage.gateway.spec.wait).toBe(true);
      expect(byStage.gateway.spec.kubeConfig).toEqual({ secretRef: { name: `${cluster}-kubeconfig` } });
      expect(byStage.gateway.spec.sourceRef).toEqual({ kind: 'GitRepository', name: 'infra' });
      expect(byStage.gateway.apiVersion).toBe('kustomize.toolkit.fluxcd.io/v1');
      for (const st of STAGES.filter((x) => x.name !== 'vm-networks' && x.name !== 'vmnet-guard')) { // this fleet declares no VM networks
        const k = byStage[st.name];
        expect(k.spec.path).toBe(`./dist/gitops/${cluster}/${st.dir}`);
        expect(synth.files.has(`${cluster}/${st.dir}/kustomization.yaml`)).toBe(true);
      }
    }
  });

  // kustomize-controller deletes a Kustomization's inventory when the Kustomization goes (deletionPolicy MirrorPrune
  // follows prune: true), all but the prune: disabled KubeVirt CR: a cluster leaving the fleet would keep a KubeVirt
  // CR naming a NAD just deleted (test/flux.real.test.ts showed it). Orphan keeps every object, as Argo CD's
  // preserveResourcesOnDeletion does; prune: true still removes what a new synth drops from a stage.
  test('a deleted Kustomization leaves its objects (deletionPolicy Orphan); objects dropped from a stage are still pruned', () => {
    for (const k of ks) {
      expect(k.spec.deletionPolicy).toBe('Orphan');
      expect(k.spec.prune).toBe(true);
    }
  });

  test('staged layout: each object sits in the directory of its wave; the root kustomization lists the stages in order', () => {
    for (const c of synth.plan.clusters) {
      const nads = kubevirtNadKeys(c);
      const root = YAML.parse(synth.files.get(`${c.name}/kustomization.yaml`)!);
      expect(root.resources).toEqual(['10-gateway', '20-network', '30-kubevirt']);
      for (const o of synth.objects.get(c.name)!) {
        const st = STAGES.find((s) => { const w = rolloutWave(o, nads); return w >= s.waves[0] && w <= s.waves[1]; })!;
        const k = YAML.parse(synth.files.get(`${c.name}/${st.dir}/kustomization.yaml`)!);
        expect(k.resources.some((r: string) => r.startsWith(`${o.kind}.`))).toBe(true);
      }
      expect(YAML.parse(synth.files.get(`${c.name}/20-network/kustomization.yaml`)!).resources).toEqual([`NetworkAttachmentDefinition.kubevirt.lm-migration.yaml`]);
      expect(YAML.parse(synth.files.get(`${c.name}/30-kubevirt/kustomization.yaml`)!).resources).toEqual([`KubeVirt.kubevirt.kubevirt.yaml`]);
    }
  });

  const kubectl = spawnSync('kubectl', ['version', '--client'], { encoding: 'utf8' }).status === 0;
  (kubectl ? test : test.skip)('kubectl kustomize builds the root and every stage directory (default load restrictor)', () => {
    const dir = suiteTmpDir('mm-gitops-');
    writeOutputs([{ dir: path.join(dir, 'gitops'), fleet: synth.plan.fleet, files: synth.files }]);
    const build = (p: string): any[] => {
      const r = spawnSync('kubectl', ['kustomize', path.join(dir, 'gitops', p)], { encoding: 'utf8' });
      expect(r.stderr).toBe('');
      return YAML.parseAllDocuments(r.stdout).map((d) => d.toJS());
    };
    const all = build('east');
    expect(all.map((o) => `${o.kind}/${o.metadata.name}`).sort()).toEqual(synth.objects.get('east')!.map((o) => `${o.kind}/${o.metadata.name}`).sort());
    const staged = STAGES.filter((s) => s.name !== 'vm-networks' && s.name !== 'vmnet-guard').flatMap((s) => build(`east/${s.dir}`)); // no VM networks here
    expect(staged).toHaveLength(all.length);
    expect(build('_gitops/flux')).toHaveLength(9);
    expect(build('_gitops/argocd')).toHaveLength(1);
    fs.rmSync(dir, { recursive: true, force: true });
  });

  test('in-cluster Flux: no kubeConfig', () => {
    const { doc } = load('gitops.fleet.yaml');
    const d = clone(doc);
    (d.spec.gitops as any).flux.inCluster = true;
    const r = synthesizeFleet(d);
    const k = YAML.parse(r.files.get('_gitops/flux/Kustomization.flux-system.gitops-east-gateway.yaml')!);
    expect(k.spec.kubeConfig).toBeUndefined();
  });

  test('direct and Harvester clusters roll out their trust agent in the gateway stage (issue #30); the chain skips empty stages', () => {
    const doc = loadFleetFile(path.join(EX, 'harvester.fleet.yaml'));
    const d = clone(doc);
    d.spec.gitops = { flux: { sourceRef: { name: 'infra' } } };
    const r = synthesizeFleet(d);
    const names = [...r.files.keys()].filter((p) => p.startsWith('_gitops/flux/Kustomization.')).sort();
    expect(names).toEqual([
      '_gitops/flux/Kustomization.flux-system.hv-hv-a-gateway.yaml',
      '_gitops/flux/Kustomization.flux-system.hv-hv-a-kubevirt.yaml',
      '_gitops/flux/Kustomization.flux-system.hv-hv-b-gateway.yaml',
      '_gitops/flux/Kustomization.flux-system.hv-hv-b-kubevirt.yaml',
      '_gitops/flux/Kustomization.flux-system.hv-kv-c-gateway.yaml',
      '_gitops/flux/Kustomization.flux-system.hv-kv-c-kubevirt.yaml',
      '_gitops/flux/Kustomization.flux-system.hv-kv-c-network.yaml',
    ]);
    const kvc = YAML.parse(r.files.get('_gitops/flux/Kustomization.flux-system.hv-kv-c-kubevirt.yaml')!);
    expect(kvc.spec.dependsOn).toEqual([{ name: 'hv-kv-c-network' }]);
    const hva = YAML.parse(r.files.get('_gitops/flux/Kustomization.flux-system.hv-hv-a-kubevirt.yaml')!);
    // Harvester's stage has no network stage between: the Setting waits for the trust agent's stage
    expect(hva.spec.dependsOn).toEqual([{ name: 'hv-hv-a-gateway' }]);
  });
});

describe('validation and determinism', () => {
  const { doc } = load('gitops.fleet.yaml');

  test('clusterServers must cover every cluster, name only fleet clusters; Argo CD needs repoURL; all reported at once', () => {
    const d = clone(doc);
    const g = d.spec.gitops as any;
    delete g.repoURL;
    delete g.argocd.clusterServers.north;
    g.argocd.clusterServers.south = 'https://10.9.0.1:6443';
    g.flux.kubeConfigSecrets = { nowhere: 'x' };
    let err: FleetValidationError | undefined;
    try { synthesizeFleet(d); } catch (e) { err = e as FleetValidationError; }
    expect(err).toBeInstanceOf(FleetValidationError);
    const paths = err!.problems.map((p) => p.path).sort();
    expect(paths).toEqual(['spec.gitops.argocd.clusterServers', 'spec.gitops.argocd.clusterServers.south', 'spec.gitops.flux.kubeConfigSecrets.nowhere', 'spec.gitops.repoURL']);
    expect(err!.problems.find((p) => p.path === 'spec.gitops.argocd.clusterServers')!.message).toContain('north');
    expect(err!.problems.every((p) => p.fix)).toBe(true);
  });

  test('synthesis is byte-identical on re-run', () => {
    const a = synthesizeFleet(doc);
    const b = synthesizeFleet(doc);
    expect([...a.files.entries()]).toEqual([...b.files.entries()]);
  });
});
