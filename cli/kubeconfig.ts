/**
 * The kubeconfig `status` and `pin-addresses` ask clusters through, loaded the same way by both: a file given
 * with --kubeconfig is read as every input is (src/base/input-file.ts `readInputText`: bounded in size and time, whatever the
 * path is, and a missing or unreadable file is a `file-unreadable` error with its fix), its relative paths taken
 * from the file's directory as `KubeConfig.loadFromFile` does; without one, $KUBECONFIG or ~/.kube/config.
 */
import * as path from 'path';
import * as k8s from '@kubernetes/client-node';
import { readInputText } from '../src/base/input-file';

export function loadKubeconfig(file: string | undefined): k8s.KubeConfig {
  const kc = new k8s.KubeConfig();
  if (!file) {
    kc.loadFromDefault();
    return kc;
  }
  kc.loadFromString(readInputText(file, 'kubeconfig'));
  kc.makePathsAbsolute(path.dirname(file));
  return kc;
}
