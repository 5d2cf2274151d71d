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
const RENDERERS = 'constructs/kubevirt/delivery-renderers.ts';

/** The registry with one more form: a copy of the `kubevirt-cr` entry under a new name (the one declared place). */
function registryWithFakeForm(): string {
  const text = read(FORMS);
  const entry = /\n {2}'kubevirt-cr': \{\n[\s\S]*?\n {2}\},\n/.exec(text);
  if (!entry) throw new Error(`stale test: no 'kubevirt-cr' entry in ${FORMS}`);
  return text.replace(entry[0], `${entry[0]}${entry[0].replace("'kubevirt-cr'", "'fake-form'").slice(1)}`);
}

describe('a new delivery form: one registry entry, then exactly what the compiler names', () => {
  let withForm: ts.Program;

  test('a form added to the registry only: the one error is the construct registry that lacks its renderer', () => {
    const forms = registryWithFakeForm();
    expect(forms).toContain("'fake-form': {");
    withForm = programWith({ [FORMS]: forms });
    const errors = errorsOf(withForm);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatch(new RegExp(`^${RENDERERS.replace(/[./]/g, '\\$&')}\\(\\d+,\\d+\\): error TS2741: Property '"fake-form"' is missing in type `));
  }, 300_000);

  test('the registry entry plus the renderer the compiler asked for compiles clean', () => {
    const renderers = insertAfter(read(RENDERERS), /\n {2}hco: hyperConverged,\n/, "  'fake-form': partialKubevirt,\n");
    const program = programWith({ [FORMS]: registryWithFakeForm(), [RENDERERS]: renderers }, withForm);
    // the first program's only error was in the renderers: the second changes that file alone
    expect(errorsOf(program, [RENDERERS, FORMS])).toEqual([]);
  }, 300_000);
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

test('no code compares a delivery form\'s name: it reads the form\'s entry or switches exhaustively', () => {
  const names = ['kubevirt-cr', 'kustomize-patch', 'hco'];
  const compare = new RegExp(`[!=]==?\\s*'(${names.join('|')})'|'(${names.join('|')})'\\s*[!=]==?`);
  const found = sources().flatMap((f) => read(f).split('\n').map((l, i) => [f, i + 1, l] as const)).filter(([, , l]) => compare.test(l)).map(([f, n, l]) => `${f}:${n}: ${l.trim()}`);
  expect(found).toEqual([]);
  // the check can fail: the line the registry replaced is caught
  expect(compare.test("if (this.delivery === 'hco') {")).toBe(true);
});
