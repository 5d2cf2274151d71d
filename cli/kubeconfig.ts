/**
 * The kubeconfig `status` and `pin-addresses` ask clusters through, loaded the same way by both: a file given
 * with --kubeconfig is read as every input is (src/base/input-file.ts `readInputText`: bounded in size and time, whatever the
 * path is, and a missing or unreadable file is a `file-unreadable` error with its fix), its relative paths taken
 * from the file's directory as `KubeConfig.loadFromFile` does; without one, $KUBECONFIG or ~/.kube/config.
 */
import * as path from 'path';
import * as k8s from '@kubernetes/client-node';
import { readInputText } from '../src/base/input-file';
import { parseYamlInput } from '../src/base/yaml-input';
import { FleetValidationError } from '../src/base/errors';

export function loadKubeconfig(file: string | undefined): k8s.KubeConfig {
  const kc = new k8s.KubeConfig();
  if (!file) {
    kc.loadFromDefault();
    return kc;
  }
  const text = readInputText(file, 'kubeconfig');
  // the one YAML reader of every input: a file that is not YAML is named with its line, code and fix
  const doc = parseYamlInput(text, file, 'yaml-syntax', 'kubeconfig', file);
  const shape = typeof doc === 'object' && doc !== null && !Array.isArray(doc) ? doc as Record<string, unknown> : undefined;
  if (!shape || !Array.isArray(shape.clusters) || !Array.isArray(shape.contexts)) {
    throw new FleetValidationError([{ code: 'status/kubeconfig-invalid', path: file,
      message: `${file} is not a kubeconfig: ${shape ? `it has no ${!Array.isArray(shape.clusters) ? 'clusters' : 'contexts'} list` : `it is ${Array.isArray(doc) ? 'a list' : `the ${typeof doc} ${JSON.stringify(doc)?.slice(0, 40)}`}, not a mapping`}`,
      fix: 'point --kubeconfig at a kubeconfig file (apiVersion: v1, kind: Config, with clusters, contexts and users), e.g. ~/.kube/config' }], file, 'kubeconfig');
  }
  try { kc.loadFromString(text); } catch (e) {
    throw new FleetValidationError([{ code: 'status/kubeconfig-invalid', path: file, message: `${file} is not a kubeconfig the client can read: ${(e as Error).message}`,
      fix: 'check its clusters, contexts and users entries (each needs a name), e.g. with kubectl --kubeconfig FILE config view' }], file, 'kubeconfig');
  }
  kc.makePathsAbsolute(path.dirname(file));
  return kc;
}
