/**
 * The upstream CustomResourceDefinitions a real API server needs before it accepts every object we emit:
 *   - test/fixtures/upstream (committed with source, commit and licence, its SOURCES.md): Forklift,
 *     OVN-Kubernetes, NAD (Multus' copy), whereabouts, IPAMClaim, nmstate, KubeVirt's MigrationPolicy schema;
 *   - test/fixtures/crds: HyperConverged (whole), PrometheusRule, SCC, MultiNetworkPolicy, cert-manager
 *     Certificate, Harvester Setting;
 *   - read from the Go module cache at test time, pinned by real/crd-sources/go.mod: KubeVirt's own CRD
 *     (kubevirt.io/kubevirt manifests/generated/kv-resource.yaml), Argo CD's Application, ApplicationSet and
 *     AppProject, Flux's Kustomization, OCIRepository and GitRepository, Prometheus Operator's ServiceMonitor.
 * `kubevirtCrdWith(schema)` swaps the KubeVirt CRD's schema for the proposed one of KubeVirt PR #17922, which a
 * native-datapath fleet declares (a build that carries the proxy serves that schema).
 */
import { execFileSync } from 'node:child_process';
import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { parseAllDocuments } from 'yaml';
import { DerivedCache } from './derived-cache';
import { FLUX_CRD_FILES, UPSTREAM_SCHEMAS_DIR, upstreamSchemaFile } from './schemas';

const ROOT = path.resolve(__dirname, '..', '..');
export type Crd = { apiVersion: string; kind: string; metadata: { name: string }; spec: Record<string, any> };

const moduleDirs = new Map<string, string>();
const CRD_SOURCES = path.join(ROOT, 'real', 'crd-sources');

/**
 * What a suite would otherwise compute again from the same inputs, kept in the checkout's cache by the harness's
 * DerivedCache (cold, never stale: stamped with this file's code, each entry checked against its input files'
 * bytes). Each real-API suite runs in its own jest process and read the same CRD files and `go mod download`
 * answers (about 2.5 CPU-s a suite: docs/dev/lab/2026-12-03-real-lane-cpu.md).
 */
let derived: DerivedCache | undefined;
function cache(): DerivedCache {
  derived ??= new DerivedCache(path.join(ROOT, 'node_modules', '.cache', 'migration-mesh', 'real-crds'),
    crypto.createHash('sha256').update([__filename, path.join(__dirname, 'derived-cache.ts')].map((f) => fs.readFileSync(f, 'utf8')).join('\0')).digest('hex'));
  return derived;
}

/** Where the Go module cache holds a module pinned by real/crd-sources (downloaded on first use, checked against go.sum). */
export function moduleDir(mod: string): string {
  let dir = moduleDirs.get(mod);
  if (!dir) {
    // the answer of `go mod download` depends only on go.mod, go.sum and the module cache's place; downloaded again
    // when that directory is gone
    dir = cache().json(`crd-source-dir-${mod}`, `${mod}\0${process.env.GOMODCACHE ?? ''}`,
      () => ({ value: downloadModule(mod), inputs: ['go.mod', 'go.sum'].map((f) => path.join(CRD_SOURCES, f)) }));
    if (!fs.existsSync(dir)) dir = downloadModule(mod);
    moduleDirs.set(mod, dir);
  }
  return dir;
}

function downloadModule(mod: string): string {
  const out = execFileSync('go', ['mod', 'download', '-json', mod], {
    cwd: CRD_SOURCES, encoding: 'utf8', timeout: 600_000,
    env: { ...process.env, PATH: `${process.env.PATH}:/usr/local/go/bin`, GOTOOLCHAIN: 'local', GOFLAGS: '-mod=mod' },
  });
  const info = JSON.parse(out) as { Dir?: string; Error?: string };
  if (!info.Dir) throw new Error(`go mod download ${mod} (real/crd-sources): ${info.Error ?? out}`);
  return info.Dir;
}

function crdsIn(file: string): Crd[] {
  return parseAllDocuments(repairedText(fs.readFileSync(file, 'utf8')))
    .map((d) => d.toJS() as Crd)
    .filter((d) => d?.kind === 'CustomResourceDefinition');
}

const yamlFiles = (dir: string) => fs.readdirSync(dir).filter((f) => /\.ya?ml$/.test(f)).sort().map((f) => path.join(dir, f));

/** Module-shipped CRD files: module path and the files inside it. */
const FROM_MODULES: ReadonlyArray<readonly [string, readonly string[]]> = [
  ['kubevirt.io/kubevirt', ['manifests/generated/kv-resource.yaml']],
  ['github.com/argoproj/argo-cd/v3', ['manifests/crds/application-crd.yaml', 'manifests/crds/applicationset-crd.yaml', 'manifests/crds/appproject-crd.yaml']],
  ['github.com/fluxcd/kustomize-controller', ['config/crd/bases/kustomize.toolkit.fluxcd.io_kustomizations.yaml']],
  ['github.com/fluxcd/source-controller', ['config/crd/bases/source.toolkit.fluxcd.io_ocirepositories.yaml', 'config/crd/bases/source.toolkit.fluxcd.io_gitrepositories.yaml']],
  ['github.com/prometheus-operator/prometheus-operator', ['example/prometheus-operator-crd/monitoring.coreos.com_servicemonitors.yaml']],
];

/**
 * The MultiNetworkPolicy CRD (k8snetworkplumbingwg/multi-networkpolicy scheme.yml at c42a39e, the newest stored)
 * has a double-quoted description (`egress.to.items`) whose second line is indented less than its key. Go's YAML
 * reader (kubectl, the API server) accepts it; the `yaml` package reads the line as a new key that swallows the
 * `properties` and `type` after it, and the API server then refuses the re-serialized CRD ("items.type: must not
 * be empty"). The line is joined before parsing; the verbatim fixture is left as upstream ships it.
 */
const repairedText = (text: string) => text.replace(/(describes a peer to allow traffic)\n\s+(from\. Only certain)/g, '$1 $2');

/**
 * KubeVirt's MigrationPolicy CRD: virt-operator creates it at install from Go code (no YAML ships in the module),
 * so it is the schema test/fixtures/upstream/kubevirt/migrationpolicy.schema.yaml (extracted from virt-operator's
 * generated validations) in the envelope virt-operator gives it (components.NewMigrationPolicyCrd: cluster-scoped,
 * group migrations.kubevirt.io, version v1alpha1, status subresource).
 */
function migrationPolicyCrd(file: string): Crd {
  const schema = (parseAllDocuments(fs.readFileSync(file, 'utf8'))[0].toJS() as { openAPIV3Schema: unknown }).openAPIV3Schema;
  return {
    apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition', metadata: { name: 'migrationpolicies.migrations.kubevirt.io' },
    spec: {
      group: 'migrations.kubevirt.io', scope: 'Cluster',
      names: { kind: 'MigrationPolicy', plural: 'migrationpolicies', singular: 'migrationpolicy', listKind: 'MigrationPolicyList', categories: ['all'] },
      versions: [{ name: 'v1alpha1', served: true, storage: true, schema: { openAPIV3Schema: schema }, subresources: { status: {} } }],
    },
  };
}

/** Every CRD, one per name (the first source wins: test/fixtures/upstream, test/fixtures/crds, modules), with where it came from. */
let crdMemo: Array<{ crd: Crd; origin: string }> | undefined;
export function upstreamCrds(): Array<{ crd: Crd; origin: string }> {
  crdMemo ??= readUpstreamCrds();
  return crdMemo;
}

function readUpstreamCrds(): Array<{ crd: Crd; origin: string }> {
  const files = [
    ...['forklift', 'ovn-k', 'whereabouts', 'ipamclaims', 'nmstate'].flatMap((d) => yamlFiles(path.join(UPSTREAM_SCHEMAS_DIR, d))),
    upstreamSchemaFile(path.join('nad', 'network-attachment-definitions.crd.multus-thick.yaml')),
    ...yamlFiles(path.join(ROOT, 'test', 'fixtures', 'crds')).filter((f) => !f.includes('.excerpt.')),
    ...FROM_MODULES.flatMap(([mod, rels]) => rels.map((r) => path.join(moduleDir(mod), r))),
  ];
  const policySchema = upstreamSchemaFile(path.join('kubevirt', 'migrationpolicy.schema.yaml'));
  // parsing these YAML files is most of the cost; the parse is kept by the files' names and contents (and this code's)
  const inputs = [...files, policySchema];
  return cache().json('upstream-crds', inputs.join('\0'), () => ({ value: parseUpstreamCrds(files, policySchema), inputs }));
}

function parseUpstreamCrds(files: readonly string[], policySchema: string): Array<{ crd: Crd; origin: string }> {
  const byName = new Map<string, { crd: Crd; origin: string }>();
  for (const f of files) {
    for (const crd of crdsIn(f)) if (!byName.has(crd.metadata.name)) byName.set(crd.metadata.name, { crd, origin: f });
  }
  byName.set('migrationpolicies.migrations.kubevirt.io', { crd: migrationPolicyCrd(policySchema), origin: policySchema });
  return [...byName.values()];
}

/** The KubeVirt CRD with `openAPIV3Schema` replaced (e.g. the proposed PR #17922 schema in test/fixtures/upstream/kubevirt/proposed). */
export function kubevirtCrdWith(schemaFile: string): Crd {
  const kv = upstreamCrds().find((c) => c.crd.metadata.name === 'kubevirts.kubevirt.io');
  if (!kv) throw new Error('no kubevirts.kubevirt.io CRD among the upstream CRDs');
  const schema = (parseAllDocuments(fs.readFileSync(schemaFile, 'utf8'))[0].toJS() as { openAPIV3Schema: unknown }).openAPIV3Schema;
  const crd = structuredClone(kv.crd);
  for (const v of crd.spec.versions as Array<{ schema: { openAPIV3Schema: unknown } }>) v.schema = { openAPIV3Schema: schema };
  return crd;
}

/**
 * KubeVirt's VirtualMachine and VirtualMachineInstance CRDs as virt-operator creates them (no YAML of them ships in the
 * module): printed by real/kubevirt-bins' mm-kubevirt-crds from KubeVirt v1.8.4's own generator
 * (components.NewVirtualMachineCrd / NewVirtualMachineInstanceCrd), built by scripts/ensure-go-bins.js.
 */
export function kubevirtWorkloadCrds(): Crd[] {
  const bin = path.join(execFileSync(process.execPath, [path.join(ROOT, 'scripts', 'ensure-go-bins.js'), '--print-dir', 'kubevirt-bins'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], timeout: 3_600_000 }).trim(), 'mm-kubevirt-crds');
  return JSON.parse(execFileSync(bin, { encoding: 'utf8', maxBuffer: 64 * 2 ** 20 })) as Crd[];
}

/**
 * The Flux CRDs committed in test/fixtures/upstream/flux (which the unit lane's schema walker reads, without Go) next
 * to the same files of the Flux modules pinned by real/crd-sources, whose controllers the real-API lane runs:
 * `[name, committed text, module text]` for each, so a test can require them equal (a bump of the pin that leaves
 * the copies behind fails there).
 */
export function fluxCrdCopies(): Array<[string, string, string]> {
  const modOf = (f: string) => (f.startsWith('kustomize.') ? 'github.com/fluxcd/kustomize-controller' : 'github.com/fluxcd/source-controller');
  return FLUX_CRD_FILES.map((f) => [
    f,
    fs.readFileSync(upstreamSchemaFile(path.join('flux', f)), 'utf8'),
    fs.readFileSync(path.join(moduleDir(modOf(f)), 'config', 'crd', 'bases', f), 'utf8'),
  ]);
}
