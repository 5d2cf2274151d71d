/** The objects synth wrote for one cluster, read back from its directory (for `status`). */
import * as fs from 'fs';
import * as path from 'path';
import * as yaml from 'yaml';

export type GeneratedObject = { apiVersion: string; kind: string; metadata: { name: string; namespace?: string }; [k: string]: unknown };

/** The generated objects of one cluster (top-level files of its directory; kustomize components are skipped). */
export function generatedObjects(dir: string): GeneratedObject[] {
  if (!fs.existsSync(dir)) throw new Error(`${dir}: no generated objects (run migration-mesh synth first, or give --out)`);
  return fs.readdirSync(dir).filter((f) => f.endsWith('.yaml') && f !== 'kustomization.yaml').sort()
    .flatMap((f) => yaml.parseAllDocuments(fs.readFileSync(path.join(dir, f), 'utf8')).map((d) => d.toJSON() as GeneratedObject))
    .filter((o) => o && typeof o.kind === 'string' && typeof o.apiVersion === 'string' && o.metadata?.name);
}
