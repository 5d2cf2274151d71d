/** The objects synth wrote for one cluster, read back from its directory (for `status`). */
import * as fs from 'fs';
import * as path from 'path';
import * as yaml from 'yaml';
import { readInputText } from '../src/base/input-file';

export type GeneratedObject = { apiVersion: string; kind: string; metadata: { name: string; namespace?: string }; [k: string]: unknown };

/** Object files under `dir`, stage directories (Flux `10-gateway/`...) included; kustomize `components/` patches are not objects. */
function objectFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : 1)).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return e.name === 'components' ? [] : objectFiles(p);
    return e.name.endsWith('.yaml') && e.name !== 'kustomization.yaml' ? [p] : [];
  });
}

/** The generated objects of one cluster. */
export function generatedObjects(dir: string): GeneratedObject[] {
  if (!fs.existsSync(dir)) throw new Error(`${dir}: no generated objects (run migration-mesh synth first, or give --out)`);
  return objectFiles(dir)
    .flatMap((f) => yaml.parseAllDocuments(readInputText(f, 'generated file')).map((d) => d.toJSON() as GeneratedObject))
    .filter((o) => o && typeof o.kind === 'string' && typeof o.apiVersion === 'string' && o.metadata?.name);
}
