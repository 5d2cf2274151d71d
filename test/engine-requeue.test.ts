/**
 * The real-API lane's engine requeues (issue 53 item 5). Argo CD (test/support/real-argo.ts): a sync operation that failed is
 * retried as Argo CD v3.2.12's application controller retries it under our Applications' `syncPolicy.retry`, and
 * only when the next try can end otherwise. Driven here over the engine's own result shape (mm-argo-sync's JSON
 * lines, as argoSync parses them) with no API server: the failure seen in a loaded run (the dry run right after
 * the CRDs were installed), the refusals that must fail at once, and the bounds. Flux (test/support/real-flux.ts):
 * kustomize-controller requeues on its own; the harness counts each failed reconcile it sees, once.
 */
import * as path from 'node:path';
import { parse } from 'yaml';
import { synthesizeFleet } from '../cli/synthesize-fleet';
import { GITOPS_DIR } from '../src/delivery/gitops';
import { loadFleetFile, loadLedgerFile, ledgerPathFor } from '../src/fleet/load';
import { retriesSoFar } from './support/kube-retry';
import { countFluxRetry, type KustomizationState } from './support/real-flux';
import {
  argoDurationMs, argoRetryWaitMs, curableSyncFailure, requeueArgoSync, type ArgoResult, type ArgoRetryStrategy, type ArgoSync,
} from './support/real-argo';

const EXAMPLE = path.resolve(__dirname, '..', 'examples', 'gitops.fleet.yaml');
const synth = synthesizeFleet(loadFleetFile(EXAMPLE), { ledger: loadLedgerFile(ledgerPathFor(EXAMPLE)) });
/** What our ApplicationSet's template gives every Application. */
const RETRY = parse([...synth.files].find(([p]) => p.startsWith(`${GITOPS_DIR}/argocd/ApplicationSet.`))![1]).spec.template.spec.syncPolicy.retry as ArgoRetryStrategy;

const CUDN = { group: 'k8s.ovn.org', kind: 'ClusterUserDefinedNetwork', namespace: 'default', name: 'blue' };
const result = (r: Partial<ArgoResult>): ArgoResult => ({ ...CUDN, status: 'Synced', hookPhase: 'Running', message: '', ...r });
const sync = (phase: string, message: string, results: ArgoResult[] = []): ArgoSync => ({
  events: [], waves: [], results, phase, message, ms: 0, cacheMs: 0, log: '', requeued: [],
});
const OK = sync('Succeeded', 'successfully synced (all tasks run)', [result({ status: 'Synced' })]);
/** The loaded run's failure: the dry run of an object whose CRD had just been installed. */
const DRY_RUN_STALE = sync('Failed', 'one or more objects failed to apply (dry run)', [result({
  status: 'SyncFailed', hookPhase: 'Failed',
  message: 'resource mapping not found for name: "blue" namespace: "" from "/dev/shm/x.yaml": no matches for kind "ClusterUserDefinedNetwork" in version "k8s.ovn.org/v1"\nensure CRDs are installed first',
})]);
const OPENAPI_STALE = sync('Failed', 'one or more objects failed to apply (dry run)', [result({
  status: 'SyncFailed', hookPhase: 'Failed', message: 'error validating data: the server could not find the requested resource',
})]);
/** A refusal: the server's schema refuses the object (test/argocd-engine.real.test.ts's broken NAD). */
const REFUSED = sync('Failed', 'one or more objects failed to apply, reason: NetworkAttachmentDefinition.k8s.cni.cncf.io "x" is invalid', [result({
  group: 'k8s.cni.cncf.io', kind: 'NetworkAttachmentDefinition', name: 'x', status: 'SyncFailed', hookPhase: 'Failed',
  message: 'NetworkAttachmentDefinition.k8s.cni.cncf.io "x" is invalid: spec.config: Invalid value: "object": spec.config in body must be of type string: "object"',
})]);
const servedAll = () => true;

describe('Argo CD\'s retry backoff', () => {
  test('our Applications\' policy waits 10, 20, 40, 80, 160 s, then never more than 5 min (duration * factor^n, capped)', () => {
    expect(RETRY).toEqual({ limit: 5, backoff: { duration: '10s', factor: 2, maxDuration: '5m' } });
    expect([0, 1, 2, 3, 4, 5, 9].map((n) => argoRetryWaitMs(RETRY, n))).toEqual([10_000, 20_000, 40_000, 80_000, 160_000, 300_000, 300_000]);
  });
  test('without a backoff Argo CD\'s defaults hold (5 s, factor 2, at most 3 min); durations as Argo CD parses them', () => {
    expect([0, 1, 6].map((n) => argoRetryWaitMs({ limit: 5 }, n))).toEqual([5_000, 10_000, 180_000]);
    expect(['10s', '5m', '1m30s', '500ms', '90'].map(argoDurationMs)).toEqual([10_000, 300_000, 90_000, 500, 90_000]);
    expect(() => argoDurationMs('ten')).toThrow('unable to parse ten as a duration');
  });
});

describe('which failed syncs a retry can cure', () => {
  test('a dry run that failed because the engine did not yet know a kind the server serves: requeued, with the object named', () => {
    expect(curableSyncFailure(DRY_RUN_STALE, servedAll)).toMatch(/^Failed: one or more objects failed to apply \(dry run\); ClusterUserDefinedNetwork\/blue: resource mapping not found/);
    expect(curableSyncFailure(OPENAPI_STALE, servedAll)).toMatch(/ClusterUserDefinedNetwork\/blue: error validating data: the server could not find/);
    // gitops-engine's own discovery without the kind: the tasks are "not valid"
    const discoveryStale = sync('Failed', 'one or more synchronization tasks are not valid', [result({ status: 'SyncFailed', message: 'ClusterUserDefinedNetwork.k8s.ovn.org "" not found' })]);
    expect(curableSyncFailure(discoveryStale, servedAll)).toMatch(/tasks are not valid; ClusterUserDefinedNetwork\/blue: ClusterUserDefinedNetwork.k8s.ovn.org "" not found$/);
    expect(curableSyncFailure(sync('Failed', 'x', [result({ status: 'SyncFailed', message: 'configmaps "c" not found' })]), servedAll)).toBeUndefined();
  });
  test('the same failure for a kind the server does not serve (a CRD never installed) is not', () => {
    const served: Array<[string, string]> = [];
    expect(curableSyncFailure(DRY_RUN_STALE, (g, k) => { served.push([g, k]); return false; })).toBeUndefined();
    expect(served).toEqual([['k8s.ovn.org', 'ClusterUserDefinedNetwork']]);
  });
  test('a refusal is not, nor a sync where one object was refused beside a curable one, nor the engine\'s own timeout', () => {
    expect(curableSyncFailure(REFUSED, servedAll)).toBeUndefined();
    expect(curableSyncFailure(sync('Failed', 'one or more objects failed to apply', [...DRY_RUN_STALE.results, ...REFUSED.results]), servedAll)).toBeUndefined();
    expect(curableSyncFailure(sync('Failed', 'timed out: waiting for healthy state of apps/Deployment/x'), servedAll)).toBeUndefined();
    expect(curableSyncFailure(OK, servedAll)).toBeUndefined();
  });
  test('the server\'s or the connection\'s "not now" is, for an object or for the setup (Error)', () => {
    const busy = sync('Failed', 'one or more objects failed to apply', [result({ status: 'SyncFailed', message: 'Timeout: request did not complete within requested timeout - context deadline exceeded' })]);
    expect(curableSyncFailure(busy, () => false)).toMatch(/Timeout: request did not complete/);
    expect(curableSyncFailure(sync('Error', 'cluster cache: dial tcp 127.0.0.1:1: connect: connection refused'), servedAll)).toBe('Error: cluster cache: dial tcp 127.0.0.1:1: connect: connection refused');
  });
});

describe('the requeue loop', () => {
  /** A stand-in for one run of mm-argo-sync: the next scripted result (what the real engine reported in each case above). */
  const scripted = (...script: ArgoSync[]) => { let n = 0; const once = async () => script[Math.min(n++, script.length - 1)]; return { once, runs: () => n }; };
  const served = async () => new Set([`${CUDN.group}/${CUDN.kind}`]);

  test('the loaded run\'s failure: requeued after the policy\'s first backoff, then the sync succeeds; the retry is counted', async () => {
    const before = retriesSoFar().length;
    const e = scripted(DRY_RUN_STALE, OK);
    const t0 = Date.now();
    const s = await requeueArgoSync('Argo CD sync of app on c', e.once, served, RETRY, { scale: 0.01 });
    expect({ phase: s.phase, runs: e.runs(), requeued: s.requeued.map((r) => r.message) }).toEqual({ phase: 'Succeeded', runs: 2, requeued: [DRY_RUN_STALE.message] });
    expect(Date.now() - t0).toBeGreaterThanOrEqual(100);
    expect(retriesSoFar().slice(before)).toEqual([{ layer: 'engine', what: 'Argo CD sync of app on c', reason: expect.stringContaining('ClusterUserDefinedNetwork/blue: resource mapping not found'), waitMs: 100 }]);
  });
  test('a refusal ends at once: one run, nothing counted', async () => {
    const before = retriesSoFar().length;
    const e = scripted(REFUSED, OK);
    const s = await requeueArgoSync('x', e.once, served, RETRY, { scale: 0.01 });
    expect({ phase: s.phase, runs: e.runs(), requeued: s.requeued.length, counted: retriesSoFar().length - before }).toEqual({ phase: 'Failed', runs: 1, requeued: 0, counted: 0 });
  });
  test('a failure that stays curable ends after `limit` retries, with the backoff doubling each time', async () => {
    const before = retriesSoFar().length;
    const e = scripted(DRY_RUN_STALE);
    const s = await requeueArgoSync('x', e.once, served, { limit: 3, backoff: { duration: '1s', factor: 2, maxDuration: '3s' } }, { scale: 0.01 });
    expect({ phase: s.phase, runs: e.runs(), requeued: s.requeued.length }).toEqual({ phase: 'Failed', runs: 4, requeued: 3 });
    expect(retriesSoFar().slice(before).map((r) => r.waitMs)).toEqual([10, 20, 30]);
  });
  test('without a retry policy the first result is the answer', async () => {
    const e = scripted(DRY_RUN_STALE, OK);
    expect((await requeueArgoSync('x', e.once, served, undefined)).phase).toBe('Failed');
    expect(e.runs()).toBe(1);
  });
  test('a suite that ends during the backoff ends the wait', async () => {
    const abort = new AbortController();
    const p = requeueArgoSync('x', scripted(DRY_RUN_STALE).once, served, RETRY, { signal: abort.signal });
    setTimeout(() => abort.abort(), 50);
    await expect(p).rejects.toThrow('aborted');
  });
});

describe('Flux\'s own requeue, counted', () => {
  const ks = (ready: { status: string; reason: string; message: string; lastTransitionTime?: string }, spec: KustomizationState['spec'] = { interval: '10m', retryInterval: '1m' }): KustomizationState => ({
    metadata: { name: 'vmnet-east' }, spec, status: { lastAttemptedRevision: 'latest@sha256:1', conditions: [{ type: 'Ready', lastTransitionTime: '2026-12-03T15:00:00Z', ...ready }] },
  });
  test('a failed reconcile is counted once however often it is read, with the retryInterval Flux waits (interval when none is set)', () => {
    const before = retriesSoFar().length;
    const failed = ks({ status: 'False', reason: 'ReconciliationFailed', message: 'ClusterUserDefinedNetwork/blue dry-run failed: no matches for kind' });
    countFluxRetry(failed);
    countFluxRetry(failed);
    countFluxRetry(ks({ status: 'False', reason: 'ReconciliationFailed', message: 'again', lastTransitionTime: '2026-12-03T15:01:00Z' }, { interval: '10m' }));
    expect(retriesSoFar().slice(before).map((r) => [r.layer, r.what, r.reason, r.waitMs])).toEqual([
      ['engine', 'Flux Kustomization vmnet-east', 'ReconciliationFailed: ClusterUserDefinedNetwork/blue dry-run failed: no matches for kind', 60_000],
      ['engine', 'Flux Kustomization vmnet-east', 'ReconciliationFailed: again', 600_000],
    ]);
  });
  test('Ready, still at work, or waiting for a dependency is no failure', () => {
    const before = retriesSoFar().length;
    countFluxRetry(ks({ status: 'True', reason: 'ReconciliationSucceeded', message: 'Applied revision' }));
    countFluxRetry(ks({ status: 'Unknown', reason: 'Progressing', message: 'Reconciliation in progress' }));
    countFluxRetry(ks({ status: 'False', reason: 'DependencyNotReady', message: 'dependency not ready' }));
    expect(retriesSoFar().length - before).toBe(0);
  });
});
