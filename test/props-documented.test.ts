/**
 * Every prop of every exported construct is documented (the project's rule, and what docs/api/ shows a user):
 * each property of each interface index.ts exports whose name ends in `Props`, inherited ones included, has a
 * TSDoc comment. Read with the TypeScript compiler from the sources, so a new undocumented prop fails here
 * with its interface and name.
 */
import * as path from 'path';
import * as ts from 'typescript';

const root = path.join(__dirname, '..');

/** "Interface.prop" for every undocumented property of the `*Props` interfaces a module exports. */
function undocumentedProps(entry: string): { props: number; missing: string[] } {
  const program = ts.createProgram([entry], { target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.CommonJS, strict: true, skipLibCheck: true, types: [] });
  const checker = program.getTypeChecker();
  const moduleSymbol = checker.getSymbolAtLocation(program.getSourceFile(entry)!)!;
  let props = 0;
  const missing: string[] = [];
  for (const exported of checker.getExportsOfModule(moduleSymbol)) {
    const symbol = exported.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(exported) : exported;
    if (!(symbol.flags & ts.SymbolFlags.Interface) || !exported.name.endsWith('Props')) continue;
    for (const prop of checker.getPropertiesOfType(checker.getDeclaredTypeOfSymbol(symbol))) {
      props++;
      if (ts.displayPartsToString(prop.getDocumentationComment(checker)).trim() === '') missing.push(`${exported.name}.${prop.name}`);
    }
  }
  return { props, missing: missing.sort() };
}

test('every prop of every exported *Props interface has a TSDoc comment', () => {
  const { props, missing } = undocumentedProps(path.join(root, 'index.ts'));
  expect(props).toBeGreaterThan(100);
  expect(missing).toEqual([]);
}, 120_000);
