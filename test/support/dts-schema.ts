/**
 * The schema harness's JSON schemas from kubernetes-models' declarations (test/support/schemas.ts): a TypeScript
 * program per kind, its types turned into JSON schema. test/support/schemas.ts requires this module only when its
 * cache lacks a schema: loading TypeScript costs each jest test file about 0.4 s of CPU.
 */
import * as ts from 'typescript';

const sourceFileCache = new Map<string, ts.SourceFile>();
const compilerOptions: ts.CompilerOptions = {
  target: ts.ScriptTarget.ES2022,
  module: ts.ModuleKind.CommonJS,
  moduleResolution: ts.ModuleResolutionKind.Node10,
  noEmit: true,
  skipLibCheck: true,
  lib: ['lib.es5.d.ts'], // for Array<T>
  types: [],
};
let compilerHost: ts.CompilerHost | undefined;
function host(): ts.CompilerHost {
  if (!compilerHost) {
    const base = ts.createCompilerHost(compilerOptions, true);
    compilerHost = {
      ...base,
      getSourceFile(fileName, languageVersion) {
        let sf = sourceFileCache.get(fileName);
        if (!sf) {
          const text = ts.sys.readFile(fileName);
          if (text === undefined) return undefined;
          sf = ts.createSourceFile(fileName, text, languageVersion, true);
          sourceFileCache.set(fileName, sf);
        }
        return sf;
      },
    };
  }
  return compilerHost;
}

/** Forgets the parsed declaration files (for resetSchemaHarness: what is derived again is derived afresh). */
export function forgetParsedFiles(): void {
  sourceFileCache.clear();
}

function typeToSchemaFactory(checker: ts.TypeChecker) {
  const defs: Record<string, any> = {};
  const named = new Map<ts.Type, string>();
  const F = ts.TypeFlags;

  const conv = (t: ts.Type): any => {
    if (t.flags & (F.Any | F.Unknown)) return { 'x-kubernetes-preserve-unknown-fields': true };
    if (t.flags & F.StringLiteral) return { type: 'string', enum: [(t as ts.StringLiteralType).value] };
    if (t.flags & F.NumberLiteral) return { type: 'number', enum: [(t as ts.NumberLiteralType).value] };
    if (t.flags & (F.Boolean | F.BooleanLiteral)) return { type: 'boolean' };
    if (t.flags & F.String) return { type: 'string' };
    if (t.flags & F.Number) return { type: 'number' };
    if (t.isUnion()) {
      const parts = t.types.filter((x) => !(x.flags & (F.Undefined | F.Null | F.Void)));
      if (parts.length > 0 && parts.every((x) => x.flags & F.BooleanLiteral)) return { type: 'boolean' };
      if (parts.length > 0 && parts.every((x) => x.flags & F.StringLiteral)) {
        return { type: 'string', enum: parts.map((x) => (x as ts.StringLiteralType).value) };
      }
      if (parts.length === 1) return conv(parts[0]);
      const branches: any[] = [];
      let sawBool = false;
      for (const p of parts) {
        if (p.flags & F.BooleanLiteral) {
          if (sawBool) continue;
          sawBool = true;
        }
        branches.push(conv(p));
      }
      return { anyOf: branches };
    }
    if (checker.isArrayType(t) || checker.isTupleType(t)) {
      const args = checker.getTypeArguments(t as ts.TypeReference);
      return { type: 'array', items: args.length ? conv(args[0]) : {} };
    }
    if (t.flags & F.Object || t.isIntersection()) {
      const sym = t.aliasSymbol ?? t.getSymbol();
      const isNamed = !!sym && (sym.flags & (ts.SymbolFlags.Interface | ts.SymbolFlags.TypeAlias)) !== 0;
      if (isNamed) {
        const existing = named.get(t);
        if (existing) return { $ref: `#/definitions/${existing}` };
        let name = sym!.getName();
        for (let i = 2; defs[name] !== undefined; i++) name = `${sym!.getName()}_${i}`;
        named.set(t, name);
        defs[name] = {}; // reserve (recursion)
        defs[name] = objectSchema(t);
        return { $ref: `#/definitions/${name}` };
      }
      return objectSchema(t);
    }
    return {};
  };

  const objectSchema = (t: ts.Type): any => {
    const out: any = { type: 'object' };
    const props: Record<string, any> = {};
    const required: string[] = [];
    for (const p of checker.getPropertiesOfType(t)) {
      const decl = p.valueDeclaration ?? p.declarations?.[0];
      if (decl && (ts.isMethodSignature(decl) || ts.isMethodDeclaration(decl))) continue;
      const pt = decl ? checker.getTypeOfSymbolAtLocation(p, decl) : checker.getTypeOfSymbol(p);
      props[p.getName()] = conv(pt);
      if (!(p.flags & ts.SymbolFlags.Optional)) required.push(p.getName());
    }
    const idx = checker.getIndexInfoOfType(t, ts.IndexKind.String);
    if (Object.keys(props).length) out.properties = props;
    if (required.length) out.required = required;
    if (idx) out.additionalProperties = conv(idx.type);
    if (!Object.keys(props).length && !idx) out['x-kubernetes-preserve-unknown-fields'] = true;
    return out;
  };

  return { conv, defs };
}

/**
 * The JSON schema of `interfaceName` in the declaration file `file`, and every file the program read (the cache
 * checks them: test/support/derived-cache.ts).
 */
export function deriveDtsSchema(file: string, interfaceName: string): { schema: any; read: string[] } {
  const program = ts.createProgram([file], compilerOptions, host());
  const checker = program.getTypeChecker();
  const sf = program.getSourceFile(file);
  const modSym = sf && checker.getSymbolAtLocation(sf);
  const sym = modSym && checker.getExportsOfModule(modSym).find((s) => s.getName() === interfaceName);
  if (!sym) throw new Error(`schemas harness: ${interfaceName} not found in ${file}`);
  const { conv, defs } = typeToSchemaFactory(checker);
  const root = conv(checker.getDeclaredTypeOfSymbol(sym));
  return { schema: { ...root, definitions: defs }, read: program.getSourceFiles().map((f) => f.fileName) };
}
