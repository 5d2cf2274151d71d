/**
 * Schema-validation harness: validates every object we emit against real upstream schemas.
 *
 * Sources of schemas, in order of precedence for an apiVersion+kind:
 *  1. KubeVirt kinds: test/fixtures/upstream/kubevirt/*.schema.yaml (openAPIV3Schema extracted from virt-operator's
 *     generated validations), KubeVirt itself optionally against the PROPOSED PR #17922 schema.
 *  2. CRDs: every CustomResourceDefinition document in test/fixtures/upstream/{nad,whereabouts,ovn-k,ipamclaims,
 *     forklift,nmstate} and test/fixtures/crds/*.yaml. All are upstream copies committed with their source, commit
 *     and licence (test/fixtures/upstream/SOURCES.md, test/fixtures/crds/SOURCES.md): nothing outside the
 *     repository is read, and no Go toolchain is needed (issue 53).
 *  3. Flux kinds: the CRDs of the Flux release the real-API lane runs, test/fixtures/upstream/flux (see fluxCrds).
 *  4. Typed models: the interface declarations (.d.ts) shipped by `kubernetes-models` (core/apps/policy/...
 *     generated from the Kubernetes OpenAPI spec) and by `@kubernetes-models/{cert-manager,prometheus-operator,
 *     argo-cd}` (generated from the upstream CRDs). They are converted to JSON schema with the
 *     TypeScript compiler API. kubernetes-models >=5 ships its validators as ESM-only precompiled code that
 *     jest (CommonJS) cannot load and that carries no schema we could walk for unknown fields, so we read the
 *     declarations instead; they carry the same field names, types, enums and required-ness.
 *
 * Every object goes through (a) ajv (types, enums, patterns, required, min/max...) and (b) a strict walker that
 * reports fields the API server would prune / reject under strict field validation.
 * Not evaluated: CEL rules (x-kubernetes-validations), defaults, list-map keys uniqueness.
 *
 * What is derived here (the prepared CRD schemas, the schemas from .d.ts, ajv's compiled validators) is kept in
 * node_modules/.cache/migration-mesh/schemas (test/support/derived-cache.ts), stamped with this file's text and
 * test/support/dts-schema.ts's, the versions of TypeScript, ajv, ajv-formats, yaml and Node, and with the hash
 * of every file it was derived from: each of the 22 suites that validate derived it all again (75 CPU seconds of the unit lane,
 * docs/dev/lab/2026-12-03-unit-lane-cpu.md). test/schema-cache.test.ts checks that what comes from the cache is
 * what is derived afresh and that the cache is never stale. (Flux's three CRDs are read each time: they cost no
 * measurable time.)
 */
import * as fs from 'fs';
import * as path from 'path';
import { createHash } from 'crypto';
import Ajv, { ErrorObject, ValidateFunction } from 'ajv';
import standaloneCode from 'ajv/dist/standalone';
import addFormats from 'ajv-formats';
import * as YAML from 'yaml';
import { CacheCounts, DerivedCache } from './derived-cache';
import type * as DtsSchema from './dts-schema';

export type KubevirtSchemaVariant = 'released' | 'pr17922';

export interface ValidateOptions {
  /** Which KubeVirt CR schema to use for kubevirt.io/v1 KubeVirt. Default 'released' (KubeVirt main @d923fdb8). */
  kubevirtSchema?: KubevirtSchemaVariant;
  /** For NetworkAttachmentDefinitions also validate spec.config with validateCniConfig. Default true. */
  checkCniConfig?: boolean;
}

export interface SchemaInfo {
  apiVersion: string;
  kind: string;
  /** Where the schema came from (file path / package), for reports and tests. */
  origin: string;
  /** 'crd' = an openAPIV3Schema from a CRD / KubeVirt file; 'dts' = derived from kubernetes-models typings. */
  flavour: 'crd' | 'dts';
}

// ---------------------------------------------------------------------------------------------
// locations

const REPO_ROOT = path.resolve(__dirname, '../..');
const FIXTURE_CRDS = path.resolve(__dirname, '../fixtures/crds');
const NODE_MODULES = path.join(REPO_ROOT, 'node_modules');

/**
 * test/fixtures/upstream: the upstream schemas and CRDs the tests validate against, committed with their source,
 * commit and licence (its SOURCES.md).
 */
export const UPSTREAM_SCHEMAS_DIR = path.resolve(__dirname, '../fixtures/upstream');

/** A file under test/fixtures/upstream; a missing one is an error that names it (never a silent skip). */
export function upstreamSchemaFile(rel: string): string {
  const file = path.join(UPSTREAM_SCHEMAS_DIR, rel);
  if (!fs.existsSync(file)) {
    throw new Error(`schemas harness: ${path.relative(REPO_ROOT, file)} is missing; it is committed with the repository (see test/fixtures/upstream/SOURCES.md)`);
  }
  return file;
}

/** Packages whose .d.ts model declarations are used as schemas (searched in this order). */
const DTS_PACKAGES = [
  'kubernetes-models',
  '@kubernetes-models/cert-manager',
  '@kubernetes-models/prometheus-operator',
  '@kubernetes-models/argo-cd',
];

// ---------------------------------------------------------------------------------------------
// schema preparation (Kubernetes OpenAPI v3 extensions -> something ajv understands)

function prepareK8sSchema(node: any): void {
  if (Array.isArray(node)) {
    node.forEach(prepareK8sSchema);
    return;
  }
  if (!node || typeof node !== 'object') return;
  if (node['x-kubernetes-int-or-string'] === true && !node.anyOf && !node.oneOf && !node.type) {
    node.anyOf = [{ type: 'integer' }, { type: 'string' }];
  }
  if (typeof node.pattern === 'string') {
    try {
      new RegExp(node.pattern);
    } catch {
      // Go RE2 syntax JS cannot compile (e.g. inline flags): keep the rest of the schema.
      node['x-harness-dropped-pattern'] = node.pattern;
      delete node.pattern;
    }
  }
  for (const key of Object.keys(node)) {
    if (key === 'enum' || key === 'default' || key === 'example' || key === 'required') continue;
    const v = node[key];
    if (key === 'properties' || key === 'patternProperties' || key === 'definitions') {
      for (const k of Object.keys(v ?? {})) prepareK8sSchema(v[k]);
    } else if (v && typeof v === 'object') {
      prepareK8sSchema(v);
    }
  }
}

let ajvInstance: Ajv | undefined;
function ajv(): Ajv {
  if (!ajvInstance) {
    ajvInstance = new Ajv({
      code: { source: true }, // keep each validator's code, for the cache (standaloneCode): the same code ajv runs
      strict: false, // x-kubernetes-* keywords, nullable, int-or-string formats...
      allErrors: true,
      unicodeRegExp: false, // CRD patterns are Go regexps, closer to non-unicode JS regexps
      logger: false, // unknown formats (int32, int64, byte, duration, ...) are ignored, like the API server
      validateSchema: false,
      inlineRefs: false,
    });
    addFormats(ajvInstance, ['date-time', 'ipv4', 'ipv6', 'uuid']);
  }
  return ajvInstance;
}

// ---------------------------------------------------------------------------------------------
// registry

interface Entry extends SchemaInfo {
  /** root schema (for dts: {$ref, definitions}) */
  schema: any;
  validate?: ValidateFunction;
}

const gvk = (apiVersion: string, kind: string) => `${apiVersion}|${kind}`;

let crdEntries: Map<string, Entry> | undefined;
const kubevirtEntries = new Map<KubevirtSchemaVariant, Entry>();
const dtsEntries = new Map<string, Entry | null>();

function loadYamlDocs(file: string): any[] {
  const text = fs.readFileSync(file, 'utf8');
  return YAML.parseAllDocuments(text, { uniqueKeys: false })
    .map((d) => d.toJS({ maxAliasCount: -1 }))
    .filter((d) => d != null);
}

function listFiles(dir: string, exts = ['.yaml', '.yml', '.json']): string[] {
  if (!fs.existsSync(dir)) return [];
  const out: string[] = [];
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) out.push(...listFiles(p, exts));
    else if (exts.some((x) => e.name.endsWith(x))) out.push(p);
  }
  return out.sort();
}

function registerCrdDoc(map: Map<string, Entry>, doc: any, origin: string): void {
  if (!doc || doc.kind !== 'CustomResourceDefinition') return;
  const group = doc.spec?.group;
  const kind = doc.spec?.names?.kind;
  for (const v of doc.spec?.versions ?? []) {
    const schema = v.schema?.openAPIV3Schema ?? doc.spec?.validation?.openAPIV3Schema;
    if (!schema) continue;
    const apiVersion = `${group}/${v.name}`;
    const key = gvk(apiVersion, kind);
    if (map.has(key)) continue; // first file wins (test/fixtures/upstream before test/fixtures/crds, sorted by name)
    prepareK8sSchema(schema);
    map.set(key, { apiVersion, kind, origin, flavour: 'crd', schema });
  }
}

/** The KubeVirt schema files of the registry: file under test/fixtures/upstream/kubevirt, apiVersion, kind. */
const KUBEVIRT_FILES: ReadonlyArray<readonly [string, string, string]> = [
  ['virtualmachine.schema.yaml', 'kubevirt.io/v1', 'VirtualMachine'],
  ['virtualmachineinstancemigration.schema.yaml', 'kubevirt.io/v1', 'VirtualMachineInstanceMigration'],
  ['migrationpolicy.schema.yaml', 'migrations.kubevirt.io/v1alpha1', 'MigrationPolicy'],
];
/** The directories under test/fixtures/upstream whose CRDs are in the registry. */
const CRD_DIRS = ['nad', 'whereabouts', 'ovn-k', 'ipamclaims', 'forklift', 'nmstate'];

/** The CRD files of the registry in the order it reads them (the first file with a kind wins). */
function crdFiles(): string[] {
  const files: string[] = [];
  for (const sub of CRD_DIRS) {
    const inDir = listFiles(path.join(UPSTREAM_SCHEMAS_DIR, sub));
    if (inDir.length === 0) throw new Error(`schemas harness: no schema file in test/fixtures/upstream/${sub}`);
    files.push(...inDir);
  }
  return [...files, ...listFiles(FIXTURE_CRDS, ['.yaml', '.yml'])];
}

function crds(): Map<string, Entry> {
  if (!crdEntries) {
    const kubevirt = KUBEVIRT_FILES.map(([file]) => upstreamSchemaFile(path.join('kubevirt', file)));
    const files = crdFiles();
    // keyed by the file list too: a file added or removed changes the registry
    const derived = cache().json('crds', [...kubevirt, ...files].join('\n'), () => ({ value: [...deriveCrds(kubevirt, files)], inputs: [...kubevirt, ...files] }));
    crdEntries = new Map(derived);
  }
  return crdEntries;
}

/** The registry of the KubeVirt schema files (KUBEVIRT_FILES' paths) and the CRD files, prepared for ajv. */
function deriveCrds(kubevirt: string[], files: string[]): Map<string, Entry> {
  const map = new Map<string, Entry>();
  KUBEVIRT_FILES.forEach(([, apiVersion, kind], i) => {
    const schema = loadYamlDocs(kubevirt[i])[0].openAPIV3Schema;
    prepareK8sSchema(schema);
    map.set(gvk(apiVersion, kind), { apiVersion, kind, origin: kubevirt[i], flavour: 'crd', schema });
  });
  for (const f of files) {
    for (const doc of loadYamlDocs(f)) registerCrdDoc(map, doc, f);
  }
  return map;
}

function kubevirtEntry(variant: KubevirtSchemaVariant): Entry {
  let e = kubevirtEntries.get(variant);
  if (!e) {
    const file = upstreamSchemaFile(variant === 'pr17922' ? 'kubevirt/proposed/kubevirt.schema.pr17922.yaml' : 'kubevirt/kubevirt.schema.yaml');
    e = cache().json(`kubevirt-${variant}`, file, () => {
      const schema = loadYamlDocs(file)[0].openAPIV3Schema;
      prepareK8sSchema(schema);
      return { value: { apiVersion: 'kubevirt.io/v1', kind: 'KubeVirt', origin: file, flavour: 'crd' as const, schema }, inputs: [file] };
    });
    kubevirtEntries.set(variant, e);
  }
  return e;
}

/**
 * Flux kinds: the CRDs of the Flux release the real-API lane runs (kustomize-controller and source-controller
 * v1.9.6, pinned by real/crd-sources): byte copies in test/fixtures/upstream/flux, so the unit lane needs no Go
 * toolchain; test/apply.real.test.ts checks that they equal the pinned modules' files. The
 * @kubernetes-models/flux-cd declarations predate fields that Flux serves, e.g. Kustomization spec.deletionPolicy.
 */
let fluxEntries: Map<string, Entry> | undefined;
function fluxCrds(): Map<string, Entry> {
  if (!fluxEntries) {
    const map = new Map<string, Entry>();
    for (const name of FLUX_CRD_FILES) {
      const f = upstreamSchemaFile(path.join('flux', name));
      for (const doc of loadYamlDocs(f)) registerCrdDoc(map, doc, f);
    }
    fluxEntries = map;
  }
  return fluxEntries;
}

/** The Flux CRD files committed in test/fixtures/upstream/flux (the same names as in the modules' config/crd/bases). */
export const FLUX_CRD_FILES = [
  'kustomize.toolkit.fluxcd.io_kustomizations.yaml',
  'source.toolkit.fluxcd.io_gitrepositories.yaml',
  'source.toolkit.fluxcd.io_ocirepositories.yaml',
] as const;

function lookup(apiVersion: string, kind: string, opts: ValidateOptions): Entry | undefined {
  if (apiVersion === 'kubevirt.io/v1' && kind === 'KubeVirt') return kubevirtEntry(opts.kubevirtSchema ?? 'released');
  if (apiVersion.split('/')[0].endsWith('.toolkit.fluxcd.io')) return fluxCrds().get(gvk(apiVersion, kind));
  return crds().get(gvk(apiVersion, kind)) ?? dtsEntry(apiVersion, kind);
}

/** Which schema would be used for apiVersion+kind (undefined = none, i.e. the object is an error). */
export function describeSchema(apiVersion: string, kind: string, opts: ValidateOptions = {}): SchemaInfo | undefined {
  const e = lookup(apiVersion, kind, opts);
  return e ? { apiVersion: e.apiVersion, kind: e.kind, origin: e.origin, flavour: e.flavour } : undefined;
}

/** All apiVersion+kind pairs backed by a CRD/KubeVirt schema file (the .d.ts fallback is resolved lazily). */
export function listCrdSchemas(): SchemaInfo[] {
  return [...crds().values()].map(({ apiVersion, kind, origin, flavour }) => ({ apiVersion, kind, origin, flavour }));
}

// ---------------------------------------------------------------------------------------------
// .d.ts (kubernetes-models) -> JSON schema (test/support/dts-schema.ts, loaded with TypeScript only when the cache lacks one)

const dtsSchema = (): typeof DtsSchema => require('./dts-schema');

function dtsFileFor(apiVersion: string, kind: string): string | undefined {
  if (!/^[A-Za-z0-9.\-/]+$/.test(apiVersion) || !/^[A-Za-z0-9]+$/.test(kind)) return undefined;
  for (const pkg of DTS_PACKAGES) {
    const f = path.join(NODE_MODULES, pkg, apiVersion, `${kind}.d.ts`);
    if (fs.existsSync(f)) return f;
  }
  return undefined;
}


/**
 * The JSON schema of `interfaceName` in `file` (cached: keyed by the file, and checked against every file the
 * program read, each with the package.json beside it).
 */
function schemaFromDts(file: string, interfaceName: string): any {
  return cache().json(`dts-${path.relative(NODE_MODULES, file)}-${interfaceName}`, `${file}\n${interfaceName}`, () => {
    const { schema, read } = dtsSchema().deriveDtsSchema(file, interfaceName);
    return { value: schema, inputs: [...read, ...read.map(packageJsonOf).filter((f): f is string => f !== undefined)] };
  });
}

/** The package.json of the package a file is in; undefined for none. */
function packageJsonOf(file: string): string | undefined {
  for (let d = path.dirname(file); d !== path.dirname(d); d = path.dirname(d)) {
    if (fs.existsSync(path.join(d, 'package.json'))) return path.join(d, 'package.json');
  }
  return undefined;
}

function dtsEntry(apiVersion: string, kind: string): Entry | undefined {
  const key = gvk(apiVersion, kind);
  if (dtsEntries.has(key)) return dtsEntries.get(key) ?? undefined;
  const file = dtsFileFor(apiVersion, kind);
  let e: Entry | null = null;
  if (file) {
    e = { apiVersion, kind, origin: path.relative(REPO_ROOT, file), flavour: 'dts', schema: schemaFromDts(file, `I${kind}`) };
  }
  dtsEntries.set(key, e);
  return e ?? undefined;
}

let objectMetaSchema: any;
function objectMeta(): any {
  if (!objectMetaSchema) {
    const f = path.join(NODE_MODULES, '@kubernetes-models/apimachinery/apis/meta/v1/ObjectMeta.d.ts');
    objectMetaSchema = schemaFromDts(f, 'IObjectMeta');
  }
  return objectMetaSchema;
}
let objectMetaValidate: ValidateFunction | undefined;

// ---------------------------------------------------------------------------------------------
// strict walker: fields the API server would prune (or reject with fieldValidation=Strict)

function deref(node: any, root: any): any {
  let n = node;
  for (let i = 0; n && typeof n.$ref === 'string' && i < 50; i++) {
    const m = /^#\/definitions\/(.+)$/.exec(n.$ref);
    if (!m) break;
    n = root.definitions?.[m[1]];
  }
  return n ?? {};
}

function objectBranches(node: any, root: any): any[] {
  const n = deref(node, root);
  const out = [n];
  for (const k of ['anyOf', 'oneOf', 'allOf']) {
    for (const b of n[k] ?? []) out.push(...objectBranches(b, root));
  }
  return out;
}

const fmtPath = (p: string) => p || '.';
const keyPath = (p: string, k: string) => (/^[A-Za-z_$][\w$-]*$/.test(k) ? `${p}.${k}` : `${p}[${JSON.stringify(k)}]`);

function walkStrict(value: any, node: any, root: any, p: string, errs: string[], isRoot: boolean): void {
  if (value === null || typeof value !== 'object') return;
  const branches = objectBranches(node, root);
  if (Array.isArray(value)) {
    const items = branches.find((b) => b.items)?.items;
    if (items) value.forEach((v, i) => walkStrict(v, items, root, `${p}[${i}]`, errs, false));
    return;
  }
  const preserve = branches.some((b) => b['x-kubernetes-preserve-unknown-fields'] === true);
  const embedded = branches.some((b) => b['x-kubernetes-embedded-resource'] === true);
  const props: Record<string, any> = {};
  let additional: any = undefined;
  let declaresObjectShape = false;
  for (const b of branches) {
    if (b.properties) {
      declaresObjectShape = true;
      for (const k of Object.keys(b.properties)) if (!(k in props)) props[k] = b.properties[k];
    }
    if (b.additionalProperties !== undefined && b.additionalProperties !== false) additional = b.additionalProperties;
    if (b.type === 'object') declaresObjectShape = true;
  }
  if (!declaresObjectShape && additional === undefined) return; // not an object schema (or an empty schema {})
  for (const k of Object.keys(value)) {
    const kp = keyPath(p, k);
    if (isRoot && (k === 'apiVersion' || k === 'kind' || k === 'metadata')) continue; // checked separately
    if (k in props) {
      walkStrict(value[k], props[k], root, kp, errs, false);
    } else if (additional !== undefined) {
      if (additional !== true) walkStrict(value[k], additional, root, kp, errs, false);
    } else if (embedded && (k === 'apiVersion' || k === 'kind' || k === 'metadata')) {
      continue;
    } else if (!preserve) {
      const known = Object.keys(props);
      errs.push(
        `${fmtPath(kp)}: unknown field "${k}"` +
          (known.length ? ` (known: ${known.slice(0, 40).join(', ')}${known.length > 40 ? ', ...' : ''})` : ' (schema declares no fields here: it would be pruned)'),
      );
    }
  }
}

// ---------------------------------------------------------------------------------------------
// ajv errors -> readable strings

function ajvPath(instancePath: string): string {
  if (!instancePath) return '.';
  return instancePath
    .split('/')
    .slice(1)
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'))
    .map((s) => (/^\d+$/.test(s) ? `[${s}]` : keyPath('', s)))
    .join('');
}

function formatAjvErrors(errors: ErrorObject[] | null | undefined, prefixPath = ''): string[] {
  const out: string[] = [];
  for (const e of errors ?? []) {
    let msg = e.message ?? e.keyword;
    if (e.keyword === 'enum') msg += ` (${(e.params as any).allowedValues.map((v: any) => JSON.stringify(v)).join(', ')})`;
    if (e.keyword === 'const') msg += ` (${JSON.stringify((e.params as any).allowedValue)})`;
    out.push(`${fmtPath(prefixPath + (e.instancePath ? ajvPath(e.instancePath) : ''))}: ${msg}`);
  }
  return [...new Set(out)];
}

function compiled(e: Entry): ValidateFunction {
  if (!e.validate) e.validate = compileCached(e.schema);
  return e.validate;
}

/**
 * ajv's validator of a schema, from the cache when it holds the schema's: ajv's standalone code of it, the code
 * ajv generates and runs for the schema, with its runtime helpers and formats required from ajv and ajv-formats.
 */
function compileCached(schema: any): ValidateFunction {
  const key = JSON.stringify(schema);
  const code = cache().text(key);
  if (code !== undefined) {
    // a CommonJS module: its requires (ajv/dist/runtime/..., ajv-formats/dist/formats) resolve from here, as ajv's
    // own in-memory compile also makes the validator with new Function
    const mod = { exports: {} as ValidateFunction };
    new Function('module', 'exports', 'require', code)(mod, mod.exports, require);
    return mod.exports;
  }
  const validate = ajv().compile(schema);
  cache().storeText(key, standaloneCode(ajv(), validate));
  return validate;
}

let derivedCache: DerivedCache | undefined;
/** Where the cache is: the checkout's own (see the top of this file), or a test's (resetSchemaHarness). */
let cacheDir = path.join(NODE_MODULES, '.cache', 'migration-mesh', 'schemas');
/** The harness's cache (see the top of this file): stamped with this file, the cache's code and the packages deriving. */
function cache(): DerivedCache {
  if (!derivedCache) {
    const version = (pkg: string): string => JSON.parse(fs.readFileSync(path.join(NODE_MODULES, pkg, 'package.json'), 'utf8')).version;
    const stamp = createHash('sha256').update([
      fs.readFileSync(__filename, 'utf8'), fs.readFileSync(path.join(__dirname, 'derived-cache.ts'), 'utf8'),
      fs.readFileSync(path.join(__dirname, 'dts-schema.ts'), 'utf8'), `typescript ${version('typescript')}`, `ajv ${version('ajv')}`, `ajv-formats ${version('ajv-formats')}`, `yaml ${version('yaml')}`, `node ${process.versions.node}`,
    ].join('\n')).digest('hex');
    derivedCache = new DerivedCache(cacheDir, stamp);
  }
  return derivedCache;
}

// ---------------------------------------------------------------------------------------------
// public API

/**
 * For test/schema-cache.test.ts: forgets every schema and validator this process derived or read and uses the
 * cache in `dir` from now on (default: the checkout's). Returns that cache's hit and miss counts (live).
 */
export function resetSchemaHarness(dir = path.join(NODE_MODULES, '.cache', 'migration-mesh', 'schemas')): CacheCounts {
  crdEntries = undefined;
  fluxEntries = undefined;
  kubevirtEntries.clear();
  dtsEntries.clear();
  dtsSchema().forgetParsedFiles();
  objectMetaSchema = undefined;
  objectMetaValidate = undefined;
  ajvInstance = undefined;
  cacheDir = dir;
  derivedCache = undefined;
  return cache().counts;
}

/** The schema an object of apiVersion+kind is validated against (undefined = none): for test/schema-cache.test.ts. */
export function schemaFor(apiVersion: string, kind: string, opts: ValidateOptions = {}): unknown {
  return lookup(apiVersion, kind, opts)?.schema;
}

/**
 * Validate one Kubernetes object. Returns human-readable errors `<kind>/<name>: <json path>: <problem>`,
 * empty when valid.
 */
export function validateObject(obj: any, opts: ValidateOptions = {}): string[] {
  if (obj === null || typeof obj !== 'object' || Array.isArray(obj)) {
    return [`<not an object>: .: expected a Kubernetes object, got ${Array.isArray(obj) ? 'array' : typeof obj}`];
  }
  const kind: string = typeof obj.kind === 'string' ? obj.kind : '<no kind>';
  const name: string = typeof obj.metadata?.name === 'string' ? obj.metadata.name : '<no name>';
  const label = `${kind}/${name}`;
  if (typeof obj.apiVersion !== 'string' || typeof obj.kind !== 'string') {
    return [`${label}: .: apiVersion and kind must be strings`];
  }
  if (obj.kind === 'List' && obj.apiVersion === 'v1' && Array.isArray(obj.items)) {
    return obj.items.flatMap((it: any) => validateObject(it, opts));
  }
  const entry = lookup(obj.apiVersion, obj.kind, opts);
  if (!entry) return [`${label}: .: no schema for ${obj.apiVersion} ${obj.kind}`];

  const problems: string[] = [];
  const validate = compiled(entry);
  if (!validate(obj)) problems.push(...formatAjvErrors(validate.errors));
  walkStrict(obj, entry.schema, entry.schema, '', problems, true);

  if (entry.flavour === 'crd') {
    // the API server validates/prunes metadata of custom resources as a real ObjectMeta
    if (obj.metadata !== undefined) {
      const meta = objectMeta();
      if (!objectMetaValidate) objectMetaValidate = compileCached(meta);
      if (!objectMetaValidate(obj.metadata)) problems.push(...formatAjvErrors(objectMetaValidate.errors, '.metadata'));
      walkStrict(obj.metadata, meta, meta, '.metadata', problems, false);
    }
  } else if (obj.metadata !== undefined) {
    walkStrict(obj.metadata, objectMeta(), objectMeta(), '.metadata', problems, false);
  }

  if (
    opts.checkCniConfig !== false &&
    obj.apiVersion === 'k8s.cni.cncf.io/v1' &&
    obj.kind === 'NetworkAttachmentDefinition' &&
    typeof obj.spec?.config === 'string'
  ) {
    problems.push(...validateCniConfig(obj.spec.config).map((e) => `.spec.config: ${e}`));
  }
  return [...new Set(problems)].map((p) => `${label}: ${p}`);
}

/**
 * Validate every document of the given YAML/JSON manifest files (or every *.yaml|*.yml|*.json under a directory).
 * NetworkAttachmentDefinitions also get their CNI config checked. Errors are prefixed with `<file>#<doc index>: `.
 */
export function validateManifestFiles(files: string[] | string, opts: ValidateOptions = {}): string[] {
  let list: string[];
  if (typeof files === 'string') {
    list = fs.statSync(files).isDirectory() ? listFiles(files) : [files];
  } else {
    list = files;
  }
  const errors: string[] = [];
  for (const f of list) {
    const rel = path.relative(process.cwd(), f) || f;
    let docs: YAML.Document.Parsed[];
    try {
      docs = YAML.parseAllDocuments(fs.readFileSync(f, 'utf8'));
    } catch (err) {
      errors.push(`${rel}: cannot read: ${(err as Error).message}`);
      continue;
    }
    docs.forEach((d, i) => {
      if (d.errors.length) {
        errors.push(...d.errors.map((e) => `${rel}#${i}: YAML error: ${e.message}`));
        return;
      }
      const obj = d.toJS();
      if (obj == null) return;
      errors.push(...validateObject(obj, opts).map((e) => `${rel}#${i}: ${e}`));
    });
  }
  return errors;
}

// ---------------------------------------------------------------------------------------------
// CNI configuration (NetworkAttachmentDefinition spec.config)

type Check = (v: any, p: string, errs: string[]) => void;

const isInt = (v: any) => typeof v === 'number' && Number.isInteger(v);
const str: Check = (v, p, e) => void (typeof v !== 'string' && e.push(`${p}: must be a string`));
const bool: Check = (v, p, e) => void (typeof v !== 'boolean' && e.push(`${p}: must be a boolean`));
const intRange =
  (min: number, max: number): Check =>
  (v, p, e) =>
    void (!isInt(v) || v < min || v > max ? e.push(`${p}: must be an integer in [${min}, ${max}], got ${JSON.stringify(v)}`) : 0);
const oneOf =
  (...allowed: string[]): Check =>
  (v, p, e) =>
    void (!allowed.includes(v) ? e.push(`${p}: must be one of ${allowed.map((a) => JSON.stringify(a)).join(', ')}, got ${JSON.stringify(v)}`) : 0);
const arrayOf =
  (item: Check): Check =>
  (v, p, e) => {
    if (!Array.isArray(v)) e.push(`${p}: must be an array`);
    else v.forEach((x, i) => item(x, `${p}[${i}]`, e));
  };
const stringMap: Check = (v, p, e) => {
  if (!v || typeof v !== 'object' || Array.isArray(v)) e.push(`${p}: must be an object`);
};

const IPV4 = /^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/;
function isIPv6(s: string): boolean {
  if (!/^[0-9a-fA-F:.]+$/.test(s) || !s.includes(':')) return false;
  const dbl = s.split('::');
  if (dbl.length > 2) return false;
  const groups = (x: string) => (x === '' ? [] : x.split(':'));
  const all = [...groups(dbl[0]), ...(dbl.length === 2 ? groups(dbl[1]) : [])];
  let n = 0;
  for (let i = 0; i < all.length; i++) {
    const g = all[i];
    if (i === all.length - 1 && g.includes('.')) {
      if (!IPV4.test(g)) return false;
      n += 2;
    } else if (/^[0-9a-fA-F]{1,4}$/.test(g)) {
      n += 1;
    } else {
      return false;
    }
  }
  return dbl.length === 2 ? n < 8 : n === 8;
}
const isIP = (s: any) => typeof s === 'string' && (IPV4.test(s) || isIPv6(s));
function isCIDR(s: any): boolean {
  if (typeof s !== 'string') return false;
  const m = /^(.+)\/(\d{1,3})$/.exec(s);
  if (!m) return false;
  const bits = Number(m[2]);
  if (IPV4.test(m[1])) return bits <= 32;
  return isIPv6(m[1]) && bits <= 128;
}
const ip: Check = (v, p, e) => void (!isIP(v) && e.push(`${p}: must be an IP address, got ${JSON.stringify(v)}`));
const cidr: Check = (v, p, e) => void (!isCIDR(v) && e.push(`${p}: must be a CIDR, got ${JSON.stringify(v)}`));
const mac: Check = (v, p, e) =>
  void (typeof v !== 'string' || !/^([0-9A-Fa-f]{2}[:-]){5}[0-9A-Fa-f]{2}$/.test(v) ? e.push(`${p}: must be a MAC address`) : 0);
/** whereabouts `range`: a CIDR, or `a.b.c.d-e.f.g.h/nn` (range-end syntax). */
const whereaboutsRange: Check = (v, p, e) => {
  if (isCIDR(v)) return;
  if (typeof v === 'string') {
    const m = /^([^-]+)-(.+)\/(\d{1,3})$/.exec(v);
    if (m && isIP(m[1]) && isCIDR(`${m[2]}/${m[3]}`)) return;
  }
  e.push(`${p}: must be a CIDR or "<start>-<end>/<prefix>" range, got ${JSON.stringify(v)}`);
};

function object(fields: Record<string, Check>, required: string[] = [], what = 'object'): Check {
  return (v, p, e) => {
    if (!v || typeof v !== 'object' || Array.isArray(v)) {
      e.push(`${p}: must be an object`);
      return;
    }
    for (const r of required) if (v[r] === undefined) e.push(`${p}: missing required key "${r}"`);
    for (const [k, x] of Object.entries(v)) {
      const c = fields[k];
      if (!c) e.push(`${keyPath(p, k)}: unknown key "${k}" for ${what} (known: ${Object.keys(fields).join(', ')})`);
      else c(x, keyPath(p, k), e);
    }
  };
}

// containernetworking/cni pkg/types/types.go Route{dst, gw, mtu, advmss, priority, table, scope}
const route = object(
  {
    dst: cidr, gw: ip, mtu: intRange(0, 1 << 30), advmss: intRange(0, 1 << 30),
    priority: intRange(0, 2 ** 32 - 1), table: intRange(0, 2 ** 32 - 1), scope: intRange(0, 255),
  },
  ['dst'],
  'route',
);
const dns = object({ nameservers: arrayOf(ip), domain: str, search: arrayOf(str), options: arrayOf(str) }, [], 'dns');

/** Per IPAM type: allowed keys (fact sheet §7: whereabouts pkg/types/types.go, plugins/ipam/static/main.go). */
const IPAM: Record<string, Record<string, Check>> = {
  whereabouts: {
    type: str,
    range: whereaboutsRange,
    range_start: ip,
    range_end: ip,
    exclude: arrayOf(cidr),
    ipRanges: arrayOf(object({ range: whereaboutsRange, range_start: ip, range_end: ip, exclude: arrayOf(cidr) }, ['range'], 'whereabouts ipRanges entry')),
    network_name: str,
    enable_overlapping_ranges: bool,
    node_slice_size: str,
    gateway: ip,
    routes: arrayOf(route),
    addresses: arrayOf(object({ address: cidr, gateway: ip }, ['address'], 'address')),
    dns,
    configuration_path: str,
    kubernetes: object({ kubeconfig: str, k8s_api_root: str }, [], 'whereabouts kubernetes'),
    log_file: str,
    log_level: oneOf('debug', 'verbose', 'error', 'panic'),
    reconciler_cron_expression: str,
    leader_lease_duration: intRange(0, 2 ** 31 - 1),
    leader_renew_deadline: intRange(0, 2 ** 31 - 1),
    leader_retry_period: intRange(0, 2 ** 31 - 1),
    sleep_for_race: intRange(0, 2 ** 31 - 1),
  },
  static: {
    type: str,
    addresses: arrayOf(object({ address: cidr, gateway: ip }, ['address'], 'static address')),
    routes: arrayOf(route),
    dns,
  },
};

function checkIpam(v: any, p: string, e: string[]): void {
  if (!v || typeof v !== 'object' || Array.isArray(v)) {
    e.push(`${p}: must be an object`);
    return;
  }
  if (Object.keys(v).length === 0) return; // chained plugin without IPAM
  const fields = IPAM[v.type];
  if (!fields) {
    e.push(`${p}.type: unsupported IPAM type ${JSON.stringify(v.type)} (supported: ${Object.keys(IPAM).join(', ')})`);
    return;
  }
  object(fields, ['type'], `ipam type ${v.type}`)(v, p, e);
  if (v.type === 'whereabouts' && v.range === undefined && v.ipRanges === undefined) e.push(`${p}: whereabouts needs "range" or "ipRanges"`);
}

// containernetworking/cni pkg/types/types.go NetConf (+ runtime-injected keys)
const COMMON: Record<string, Check> = {
  cniVersion: oneOf('0.1.0', '0.2.0', '0.3.0', '0.3.1', '0.4.0', '1.0.0', '1.1.0'),
  name: str,
  type: str,
  capabilities: (v, p, e) => {
    stringMap(v, p, e);
    if (v && typeof v === 'object') for (const [k, x] of Object.entries(v)) bool(x, keyPath(p, k), e);
  },
  ipam: checkIpam,
  dns,
};
const runtimeConfigMac = object({ mac: mac }, [], 'runtimeConfig');

/** Plugin-specific keys: fact sheet §7, plus ipvlan from containernetworking/plugins plugins/main/ipvlan/ipvlan.go. */
const PLUGINS: Record<string, Record<string, Check>> = {
  macvlan: {
    master: str,
    mode: oneOf('bridge', 'private', 'vepa', 'passthru'),
    mtu: intRange(0, 65535),
    mac,
    linkInContainer: bool,
    bcqueuelen: intRange(0, 2 ** 31 - 1),
    runtimeConfig: runtimeConfigMac,
  },
  bridge: {
    bridge: (v, p, e) => {
      str(v, p, e);
      if (typeof v === 'string' && (v.length === 0 || v.length > 15)) e.push(`${p}: interface name must be 1-15 characters`);
    },
    isGateway: bool,
    isDefaultGateway: bool,
    forceAddress: bool,
    ipMasq: bool,
    ipMasqBackend: oneOf('iptables', 'nftables'),
    mtu: intRange(0, 65535),
    hairpinMode: bool,
    promiscMode: bool,
    vlan: intRange(0, 4094),
    vlanTrunk: arrayOf(object({ id: intRange(0, 4094), minID: intRange(0, 4094), maxID: intRange(0, 4094) }, [], 'vlanTrunk entry')),
    preserveDefaultVlan: bool,
    macspoofchk: bool,
    enabledad: bool,
    disableContainerInterface: bool,
    portIsolation: bool,
    args: object({ cni: object({ mac }, [], 'args.cni') }, [], 'args'),
    runtimeConfig: runtimeConfigMac,
  },
  vlan: { master: str, vlanId: intRange(0, 4094), mtu: intRange(0, 65535), linkInContainer: bool },
  'host-device': { device: str, hwaddr: mac, kernelpath: str, pciBusID: str, runtimeConfig: object({ deviceID: str }, [], 'runtimeConfig') },
  ipvlan: { master: str, mode: oneOf('l2', 'l3', 'l3s'), mtu: intRange(0, 65535), linkInContainer: bool },
};
const REQUIRED_PLUGIN_KEYS: Record<string, string[]> = { vlan: ['vlanId'] };

function checkPlugin(conf: any, p: string, e: string[], inList: boolean): void {
  if (!conf || typeof conf !== 'object' || Array.isArray(conf)) {
    e.push(`${p}: plugin config must be an object`);
    return;
  }
  if (typeof conf.type !== 'string') {
    e.push(`${p}: missing "type"`);
    return;
  }
  const specific = PLUGINS[conf.type];
  if (!specific) {
    e.push(`${p}.type: unsupported CNI plugin type ${JSON.stringify(conf.type)} (supported: ${Object.keys(PLUGINS).join(', ')})`);
    return;
  }
  const required = ['type', ...(inList ? [] : ['cniVersion', 'name']), ...(REQUIRED_PLUGIN_KEYS[conf.type] ?? [])];
  object({ ...COMMON, ...specific }, required, `CNI plugin ${conf.type}`)(conf, p, e);
  if (conf.type === 'bridge' && conf.vlan !== undefined && conf.vlanTrunk !== undefined) {
    e.push(`${p}: bridge "vlan" and "vlanTrunk" cannot be combined`);
  }
}

/**
 * Validate a NetworkAttachmentDefinition `spec.config` (a CNI network configuration, or a conflist with `plugins`).
 * Returns errors as `<json path>: <problem>`; unknown keys are errors.
 */
export function validateCniConfig(configJson: string): string[] {
  let conf: any;
  try {
    conf = JSON.parse(configJson);
  } catch (err) {
    return [`.: not valid JSON: ${(err as Error).message}`];
  }
  const e: string[] = [];
  if (!conf || typeof conf !== 'object' || Array.isArray(conf)) return ['.: CNI config must be a JSON object'];
  if (conf.plugins !== undefined) {
    // conflist (containernetworking/cni libcni NetworkConfigList)
    object(
      {
        cniVersion: COMMON.cniVersion, cniVersions: arrayOf(COMMON.cniVersion), name: str,
        disableCheck: bool, disableGC: bool, loadOnlyInlinedPlugins: bool, plugins: () => undefined,
      },
      ['cniVersion', 'name', 'plugins'],
      'CNI conflist',
    )(conf, '', e);
    if (!Array.isArray(conf.plugins) || conf.plugins.length === 0) e.push('.plugins: must be a non-empty array');
    else conf.plugins.forEach((pl: any, i: number) => checkPlugin(pl, `.plugins[${i}]`, e, true));
  } else {
    checkPlugin(conf, '', e, false);
  }
  return e.map((x) => (x.startsWith(':') ? `.${x}` : x));
}
