/**
 * The served-namespace guard (constructs/vmnet/existing-namespace-guard.ts, issue 40 item 2) as synth emits it:
 * which namespaces it covers, that its refusal says what `migration-mesh status` says (one text, src/vmnet/namespaces.ts),
 * and where the rollout puts it (before the Namespaces, in a stage of its own). What the server does with it:
 * test/vmnet-namespace-guard.real.test.ts.
 */
import { App, Chart } from 'cdk8s';
import { VmNetworks } from '../index';
import { rolloutWave, stageOfWave } from '../src/delivery/rollout';
import { servedNamespaceProblems } from '../src/vmnet/namespaces';
import { resolveVmNetworks } from '../src/vmnet/plan';
import { validateObject } from './support/schemas';
import { vmFleet } from './support/vmnet-fleet';

const GUARD = 'migration-mesh-served-namespace-label';

function objectsOf(patch?: Parameters<typeof vmFleet>[0]) {
  const fra = resolveVmNetworks(vmFleet(patch)).perCluster.get('fra-1')!;
  const chart = new Chart(new App(), 'c', { disableResourceNameHashes: true });
  new VmNetworks(chart, 'V', { networks: fra.networks, cluster: 'fra-1' });
  return { fra, objs: chart.toJson() as any[] };
}

/** The text a messageExpression of the form 'a' + object.metadata.name + 'b' ... gives for namespace `ns`. */
function messageFor(expr: string, ns: string): string {
  return expr.split(' + object.metadata.name + ').map((lit) => {
    expect(lit).toMatch(/^'([^'\\]|\\.)*'$/);
    return lit.slice(1, -1).replace(/\\(.)/g, '$1');
  }).join(ns);
}

describe('the served-namespace guard', () => {
  test('one policy over the primary network\'s served namespaces only, on namespace UPDATEs; a Deny binding; both pass the API schema', () => {
    const { objs } = objectsOf();
    const policy = objs.find((o) => o.kind === 'ValidatingAdmissionPolicy' && o.metadata.name === GUARD);
    const binding = objs.find((o) => o.kind === 'ValidatingAdmissionPolicyBinding' && o.metadata.name === GUARD);
    expect(policy.spec.matchConstraints.resourceRules).toEqual([{ apiGroups: [''], apiVersions: ['v1'], operations: ['UPDATE'], resources: ['namespaces'], resourceNames: ['tenant-blue'] }]);
    expect(policy.spec.failurePolicy).toBe('Fail');
    expect(policy.spec.validations).toHaveLength(1); // blue; not the localnet network, whose namespaces need no label
    expect(binding.spec).toEqual({ policyName: GUARD, validationActions: ['Deny'] });
    expect([policy, binding].flatMap((o) => validateObject(o))).toEqual([]);
  });

  test('its refusal is status\'s problem and fix for the same namespace, word for word', () => {
    const { fra, objs } = objectsOf();
    const policy = objs.find((o) => o.kind === 'ValidatingAdmissionPolicy' && o.metadata.name === GUARD);
    const [p] = servedNamespaceProblems(fra, [{ name: 'tenant-blue' }]);
    expect(p.code).toBe('vmnet-namespace-label');
    expect(messageFor(policy.spec.validations[0].messageExpression, 'tenant-blue')).toBe(`${p.message}: ${p.fix}`);
  });

  test('rollout: wave 6 in its own stage 35-vmnet-guard, before the served Namespaces (wave 7, 40-vm-networks)', () => {
    const { objs } = objectsOf();
    const guard = objs.filter((o) => o.metadata.name === GUARD);
    const ns = objs.find((o) => o.kind === 'Namespace' && o.metadata.name === 'tenant-blue');
    expect(guard.map((o) => rolloutWave(o, new Set()))).toEqual([6, 6]);
    expect(guard.map((o) => stageOfWave(rolloutWave(o, new Set())).dir)).toEqual(['35-vmnet-guard', '35-vmnet-guard']);
    expect([rolloutWave(ns, new Set()), stageOfWave(rolloutWave(ns, new Set())).dir]).toEqual([7, '40-vm-networks']);
    // an unrelated policy of that name's kind keeps its kind's wave
    expect(rolloutWave({ kind: 'ValidatingAdmissionPolicy', metadata: { name: 'someone-elses' } }, new Set())).toBe(3);
  });

  test('a cluster whose networks serve no namespace as primary (localnet only) gets no guard', () => {
    const { objs } = objectsOf((f) => { f.spec.vmNetworks.splice(0, 1); });
    expect(objs.filter((o) => o.metadata.name === GUARD)).toEqual([]);
    expect(objs.filter((o) => o.kind === 'Namespace')).toEqual([]);
  });
});
