/**
 * A new variant is one entry in one registry plus what the compiler demands (issue 53 item 4). This suite
 * proves it for the delivery forms (src/kubevirt/delivery-forms.ts): it type-checks the library (the
 * TypeScript compiler API, in memory: nothing is written, lib/ is left alone) with one fake form added to
 * the registry, and asserts the errors name exactly the places that must handle a form (the construct
 * registry), nothing else; then that the form plus those entries compiles clean. A second check reads the
 * sources: no code compares a form's name, so no `if (form === 'hco') ... else` can take a new form
 * silently. docs/dev/architecture.md shows the same errors.
 */
import * as fs from 'fs';
import * as path from 'path';
import * as ts from 'typescript';

const ROOT = path.resolve(__dirname, '..');
const rel = (f: string): string => path.relative(ROOT, f).split(path.sep).join('/');

const config = ((): ts.ParsedCommandLine => {
  const host: ts.ParseConfigFileHost = { ...ts.sys, onUnRecoverableConfigFileDiagnostic: (d) => { throw new Error(ts.flattenDiagnosticMessageText(d.messageText, '\n')); } };
  return ts.getParsedCommandLineOfConfigFile(path.join(ROOT, 'tsconfig.json'), { noEmit: true, incremental: false, declaration: false, sourceMap: false }, host)!;
})();

/** A program over the library with some files' text replaced (repository-relative path -> text). */
function programWith(overrides: Record<string, string>, oldProgram?: ts.Program): ts.Program {
  const host = ts.createCompilerHost(config.options, true);
  const over = new Map(Object.entries(overrides).map(([f, t]) => [path.join(ROOT, f), t]));
  const getSourceFile = host.getSourceFile.bind(host);
  const readFile = host.readFile.bind(host);
  host.getSourceFile = (f, lang, ...rest) => {
    const text = over.get(path.resolve(f));
    return text !== undefined ? ts.createSourceFile(f, text, lang, true) : getSourceFile(f, lang, ...rest);
  };
  host.readFile = (f) => over.get(path.resolve(f)) ?? readFile(f);
  return ts.createProgram({ rootNames: config.fileNames, options: config.options, host, oldProgram });
}

const formatHost: ts.FormatDiagnosticsHost = { getCanonicalFileName: (f) => f, getCurrentDirectory: () => ROOT, getNewLine: () => '\n' };

/** Every error of the program (or of the named files only), as tsc prints them, one line each. */
function errorsOf(program: ts.Program, only?: readonly string[]): string[] {
  const files = only ? only.map((f) => program.getSourceFile(path.join(ROOT, f))!) : undefined;
  const diags = files
    ? files.flatMap((f) => [...program.getSyntacticDiagnostics(f), ...program.getSemanticDiagnostics(f)])
    : ts.getPreEmitDiagnostics(program);
  return ts.formatDiagnostics(diags, formatHost).split('\n').filter((l) => / error TS\d+/.test(l)).map((l) => l.trim());
}

const read = (f: string): string => fs.readFileSync(path.join(ROOT, f), 'utf8');

/** `text` with `add` inserted after the first match of `after`, which must be there (else the test is stale). */
function insertAfter(text: string, after: RegExp, add: string): string {
  const m = after.exec(text);
  if (!m) throw new Error(`stale test: ${after} no longer matches`);
  return text.slice(0, m.index + m[0].length) + add + text.slice(m.index + m[0].length);
}

const FORMS = 'src/kubevirt/delivery-forms.ts';
const MODES = 'src/fleet/datapath-modes.ts';

/** A registry with one more entry: a copy of the entry `key` under `fake` (the one declared place). */
function registryWith(file: string, key: string, fake: string): string {
  const text = read(file);
  const entry = new RegExp(`\\n {2}${key.replace(/[-']/g, '\\$&')}: \\{\\n[\\s\\S]*?\\n {2}\\},\\n`).exec(text);
  if (!entry) throw new Error(`stale test: no ${key} entry in ${file}`);
  return text.replace(entry[0], `${entry[0]}${entry[0].replace(key, `'${fake}'`).slice(1)}`);
}

/** The two registries, each with a fake variant and nothing else changed. */
const fakes = (): Record<string, string> => ({
  [FORMS]: registryWith(FORMS, "'kubevirt-cr'", 'fake-form'),
  [MODES]: registryWith(MODES, 'gateway', 'fake-mode'),
});

/**
 * What the compiler names for each fake, as `file: TS code: what`; the place an entry is missing from is the
 * place that handles the variant by name (a Record or an exhaustive switch ending in assertNever).
 */
const DEMANDED = [
  'constructs/kubevirt/delivery-renderers.ts: TS2741: fake-form', // the form's renderer (DELIVERY_RENDERERS)
  'src/fleet/resolved.ts: TS2345: fake-mode', // crossClusterNeeded: the mode's addresses on the shared network
  'src/fleet/shared-network.ts: TS2741: fake-mode', // the pool-too-small message: what the mode counts
  'src/report/plan-report.ts: TS2741: fake-mode', // `plan`: clusters per mode
];

/** One tsc line as `file: TS code: the fake it names`. */
const demand = (line: string): string => {
  const m = /^(.+?)\(\d+,\d+\): error (TS\d+): .*?(fake-form|fake-mode)/.exec(line);
  return m ? `${m[1]}: ${m[2]}: ${m[3]}` : line;
};

describe('a new delivery form or datapath mode: one registry entry, then exactly what the compiler names', () => {
  let withFakes: ts.Program;

  test('the fakes added to their registries only: the errors are exactly the places that handle a variant by name', () => {
    const f = fakes();
    expect(f[FORMS]).toContain("'fake-form': {");
    expect(f[MODES]).toContain("'fake-mode': {");
    withFakes = programWith(f);
    const errors = errorsOf(withFakes);
    expect(errors.map(demand).sort()).toEqual(DEMANDED);
    // a missing Record entry names the fake itself
    expect(errors.find((l) => l.startsWith('constructs/kubevirt/delivery-renderers.ts'))).toMatch(/error TS2741: Property '"fake-form"' is missing in type /);
  }, 900_000);

  test('the registry entries plus what the compiler asked for compile clean', () => {
    const add = (file: string, after: RegExp, line: string) => insertAfter(read(file), after, line);
    const handled: Record<string, string> = {
      'constructs/kubevirt/delivery-renderers.ts': add('constructs/kubevirt/delivery-renderers.ts', /\n {2}hco: hyperConverged,\n/, "  'fake-form': partialKubevirt,\n"),
      'src/fleet/resolved.ts': add('src/fleet/resolved.ts', /\n {4}case 'gateway': return c\.gatewayReplicas;\n/, "    case 'fake-mode': return c.gatewayReplicas;\n"),
      'src/fleet/shared-network.ts': add('src/fleet/shared-network.ts', /\n {4}gateway: \(gw\) => .*\n/, "    'fake-mode': (l) => `fake-mode: ${l.length}`,\n"),
      'src/report/plan-report.ts': add('src/report/plan-report.ts', /\{ gateway: 0,/, " 'fake-mode': 0,"),
    };
    const program = programWith({ ...fakes(), ...handled }, withFakes);
    // the first program's errors were in these files alone: the second changes them alone
    expect(errorsOf(program, [FORMS, MODES, ...Object.keys(handled)])).toEqual([]);
  }, 900_000);
});

/** Every .ts file under the library's layers. */
function sources(): string[] {
  const out: string[] = [];
  const walk = (d: string): void => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const full = path.join(d, e.name);
      if (e.isDirectory()) walk(full);
      else if (e.name.endsWith('.ts')) out.push(rel(full));
    }
  };
  for (const d of ['src', 'constructs', 'cli']) walk(path.join(ROOT, d));
  return [...out, 'index.ts'];
}

/** Lines comparing a value with one of `names` (`x === 'hco'`, `'direct' !== x`), as `file:line: text`. */
function comparisons(names: readonly string[]): string[] {
  const compare = new RegExp(`[!=]==?\\s*'(${names.join('|')})'|'(${names.join('|')})'\\s*[!=]==?`);
  return sources().flatMap((f) => read(f).split('\n').map((l, i) => [f, i + 1, l] as const))
    .filter(([, , l]) => compare.test(l)).map(([f, n, l]) => `${f}:${n}: ${l.trim()}`);
}

test('no code compares a delivery form\'s name: it reads the form\'s entry or switches exhaustively', () => {
  expect(comparisons(['kubevirt-cr', 'kustomize-patch', 'hco'])).toEqual([]);
});

test('no code compares a datapath mode with a name: it reads the mode\'s entry or switches exhaustively', () => {
  // `datapath === 'gateway'` and the like; `keptBy === 'gateway'` (trust report) and stage names are other unions
  expect(comparisons(['gateway', 'native', 'direct']).filter((l) => /datapath|mode\b/.test(l))).toEqual([]);
});

test('the comparison check can fail: the lines the registries replaced are caught', () => {
  const compare = (names: string[], line: string): boolean => new RegExp(`[!=]==?\\s*'(${names.join('|')})'`).test(line);
  expect(compare(['hco'], "if (this.delivery === 'hco') {")).toBe(true);
  expect(compare(['direct'], "if (cidr && c.datapath !== 'direct' && !c.migrationCidr)")).toBe(true);
});
