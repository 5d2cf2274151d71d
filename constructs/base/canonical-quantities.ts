/**
 * Writes a workload's container quantities as the API server stores them (src/base/quantity.ts).
 *
 * cdk8s-plus-28 renders every memory size in `Mi` (`1024Mi`); a real API server reads it back as `1Gi`, so a
 * GitOps engine comparing text would see the Deployment drift on every sync (found by test/apply.real.test.ts on
 * a real kube-apiserver). The rendering of the underlying ApiObject is wrapped, so containers a user adds through
 * the cdk8s-plus handles are covered too.
 */
import { ApiObject } from 'cdk8s';
import { canonicalizeWorkloadQuantities } from '../../src/base/quantity';

export function canonicalQuantitiesOf(obj: ApiObject): ApiObject {
  const render = obj.toJson.bind(obj);
  obj.toJson = () => canonicalizeWorkloadQuantities(render());
  return obj;
}
