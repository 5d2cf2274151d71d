/**
 * Test support: virt-operator's CA handling for one simulated cluster, on a FakeKubeApi. It stands for KubeVirt
 * v1.8.4's virt-operator where a real one per cluster cannot run (many clusters in network namespaces, clocks the
 * tests move). test/virt-operator-model-agreement.real.test.ts runs it beside the real virt-operator, step by step with
 * the same inputs, and shows they agree (kubevirt-ca role by role, kubevirt-external-ca after each reconcile). A model of the
 * semantics of KubeVirt core.go shouldUpdateBundle + secrets.go MergeCABundle (not KubeVirt code; main @d923fdb8:
 * https://github.com/kubevirt/kubevirt/blob/d923fdb815cd2016ddaebdaaa51db04133576d72/pkg/virt-operator/resource/apply/core.go#L668-L700, https://github.com/kubevirt/kubevirt/blob/d923fdb815cd2016ddaebdaaa51db04133576d72/pkg/virt-operator/resource/generate/components/secrets.go#L707-L747):
 *   - the CA rotates when it is `duration - renewBefore` old; the new one is valid for `duration`;
 *   - merge: keep certs not yet expired, newest first; stop at the first cert whose newer neighbour (for
 *     the first: the current CA) is older than the overlap (`renewBefore`); current CA first;
 *   - then append the valid, not yet present certs of `kubevirt-external-ca`, and empty that ConfigMap;
 *   - a write to `kubevirt-external-ca` triggers a reconcile (the operator's informer), and so does the
 *     operator's own clearing write (a second reconcile, with nothing external).
 * Strict (the default), as virt-operator's informer is: the operator sees a ConfigMap only while its labels
 * match `!kubevirt.io/install-strategy, app.kubernetes.io/managed-by=virt-operator` (kubevirt/kubevirt
 * pkg/controller/virtinformers.go OperatorConfigMap()). Read in pkg/virt-operator/resource/apply/core.go
 * (createExternalKubeVirtCAConfigMap, getRemotePublicCas, cleanupExternalCACerts) what it then does with
 * `kubevirt-external-ca`, and modelled here:
 *   - absent from its cache: it Creates the ConfigMap from its install strategy (its labels, `ca-bundle: ""`);
 *     if one exists without the labels, the Create fails with AlreadyExists, which it ignores: the
 *     unlabelled object stays as it is, is never read (no peer CA is merged) and never cleared;
 *   - in its cache: it reads `ca-bundle`, then Updates the object to its template (unconditionally, no
 *     resourceVersion): its own labels and annotations, data `{ca-bundle: ""}`, no binaryData. Foreign
 *     labels, annotations, data keys and binaryData are gone after every reconcile.
 *   - a write that changes nothing is a no-op (no event), as at the API server.
 * `strict: false` is the old, lenient model (every object visible) for comparison.
 *
 * `rotateNow()` rotates ahead of schedule, as virt-operator does the moment the KubeVirt CR's CA duration
 * changes (certificationNeedsRotation: the CA Secret's `kubevirt.io/duration` annotation differs, core.go
 * 177-195, https://github.com/kubevirt/kubevirt/blob/d923fdb815cd2016ddaebdaaa51db04133576d72/pkg/virt-operator/resource/apply/core.go#L177-L195); the merge then keeps the old CA for the overlap.
 * `issueCa` lets a test issue the CAs itself (e.g. with openssl, keeping the key to issue leaf certs).
 */
import * as crypto from 'node:crypto';
import { FakeKubeApi } from './fake-kube';
import { makeCert, TestCert } from './ca-certs';

export interface SimCa { id: string; nb: number; na: number; pem: string; sha256: string }

/** The operator labels on the ConfigMaps virt-operator creates (a subset: what the informer selects on, and the component). */
export const MANAGED = { 'app.kubernetes.io/managed-by': 'virt-operator', 'app.kubernetes.io/component': 'kubevirt' };
const EXTERNAL = 'kubevirt-external-ca';

/** Does virt-operator's ConfigMap informer see an object with these labels? */
export function informerSees(labels: Record<string, string> | undefined): boolean {
  return labels?.['app.kubernetes.io/managed-by'] === 'virt-operator' && !(labels && 'kubevirt.io/install-strategy' in labels);
}
const PEM_RE = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----\n?/g;

function toSim(c: TestCert, id: string): SimCa {
  return { id, nb: c.notBefore, na: c.notAfter, pem: c.pem, sha256: crypto.createHash('sha256').update(c.der).digest('hex') };
}

function fromPem(pem: string): SimCa | undefined {
  try {
    const x = new crypto.X509Certificate(pem);
    return { id: x.subject, nb: Date.parse(x.validFrom), na: Date.parse(x.validTo), pem: pem.endsWith('\n') ? pem : `${pem}\n`, sha256: crypto.createHash('sha256').update(x.raw).digest('hex') };
  } catch { return undefined; }
}

/** KubeVirt's maxCertificatesInBundle (components/secrets.go): a longer kubevirt-ca is cut to this many, newest first. */
const MAX_CERTIFICATES_IN_BUNDLE = 50;

/** MergeCABundle (components/secrets.go): valid certs, newest first by notBefore in whole seconds (a stable sort), at most 50. */
export function mergeBundle(current: SimCa, bundle: SimCa[], overlapMs: number, now: number): SimCa[] {
  const valid = bundle.filter((c) => c.na >= now).sort((a, b) => Math.floor(b.nb / 1000) - Math.floor(a.nb / 1000)).slice(0, MAX_CERTIFICATES_IN_BUNDLE);
  const out: SimCa[] = [];
  for (let i = 0; i < valid.length; i++) {
    const newer = i === 0 ? current : valid[i - 1];
    if (newer.nb + overlapMs < now) break;
    if (valid[i].sha256 === current.sha256) continue;
    out.push(valid[i]);
  }
  return [current, ...out];
}

/**
 * getRemotePublicCas (apply/core.go): client-go's cert.ParseCertsPEM reads the bundle as a whole, so one CERTIFICATE
 * block that does not parse makes it merge none of them (the reconcile empties the ConfigMap all the same); then
 * the certs valid now, each once. Seen on the real operator: test/virt-operator-model-agreement.real.test.ts.
 */
export function externalCas(text: string, now: number): SimCa[] {
  const parsed = (text.match(PEM_RE) ?? []).map(fromPem);
  if (parsed.some((c) => !c)) return [];
  const out: SimCa[] = [];
  for (const c of parsed as SimCa[]) if (c.nb < now && now < c.na && !out.some((o) => o.sha256 === c.sha256)) out.push(c);
  return out;
}

/** Issues the CA `id` valid from `nb` to `na` (ms); the model's default is ca-certs' makeCert. */
export type CaIssuer = (id: string, nb: number, na: number) => SimCa;

export class VirtOperatorModel {
  ca!: SimCa;
  bundle: SimCa[] = [];
  rotations = 0;
  private k = 0;
  private rotateAtNextReconcile = false;

  /** Reconciles run, and how many of them could not see kubevirt-external-ca (unlabelled). */
  readonly stats = { reconciles: 0, externalInvisible: 0 };

  constructor(readonly api: FakeKubeApi, readonly cluster: string, readonly durationMs: number, readonly renewBeforeMs: number, readonly clock: () => number,
    readonly o: { strict?: boolean; issueCa?: CaIssuer } = {}) {}

  private get strict(): boolean { return this.o.strict ?? true; }

  /** kubevirt-external-ca as the operator's informer cache holds it (undefined when absent or filtered out). */
  private cachedExternal() {
    const o = this.api.get(EXTERNAL);
    return o && (!this.strict || informerSees(o.metadata.labels)) ? o : undefined;
  }

  /** Install with a CA already `ageMs` old; creates both ConfigMaps, then hooks the informer. */
  install(ageMs: number): void {
    const nb = this.clock() - ageMs;
    this.ca = this.newCa(nb);
    this.bundle = [this.ca];
    this.api.put('kubevirt-ca', { 'ca-bundle': this.ca.pem }, MANAGED);
    this.api.put(EXTERNAL, { 'ca-bundle': '' }, MANAGED);
    this.hook();
  }

  /** The informer: an HTTP write of kubevirt-external-ca it can see (before or after) triggers a reconcile. */
  hook(): void {
    this.api.onUpdate = (name, prev, next) => {
      if (name !== EXTERNAL) return;
      if (this.strict && !informerSees(prev.metadata.labels) && !informerSees(next.metadata.labels)) return;
      this.reconcileTwice();
    };
  }

  /** Someone deletes kubevirt-external-ca: the informer's DELETED event triggers a reconcile, which recreates it. */
  deleteExternal(): void {
    const o = this.api.get(EXTERNAL);
    this.api.delete(EXTERNAL);
    if (o && (!this.strict || informerSees(o.metadata.labels))) this.reconcile();
  }

  private newCa(nb: number): SimCa {
    const id = `${this.cluster}-ca-${this.k++}`;
    if (this.o.issueCa) return this.o.issueCa(id, nb, nb + this.durationMs);
    return toSim(makeCert(`kubevirt.io@${id}`, nb, nb + this.durationMs), id);
  }

  /** A rotation ahead of schedule (a changed CA duration): a new CA now, merged by a reconcile. Returns it. */
  rotateNow(): SimCa {
    this.rotateAtNextReconcile = true;
    this.reconcile();
    return this.ca;
  }

  /** The reconcile that ingests the external ConfigMap, then the one its clearing write triggers. */
  reconcileTwice(): void {
    this.reconcile();
    this.reconcile();
  }

  reconcile(): void {
    const now = this.clock();
    this.stats.reconciles++;
    // createExternalKubeVirtCAConfigMap: Create when the cache lacks it (AlreadyExists ignored)
    if (!this.cachedExternal()) {
      if (!this.api.create(EXTERNAL, { 'ca-bundle': '' }, MANAGED)) this.stats.externalInvisible++;
    }
    const cached = this.cachedExternal();
    if (this.rotateAtNextReconcile || now >= this.ca.nb + (this.durationMs - this.renewBeforeMs)) {
      this.rotateAtNextReconcile = false;
      this.ca = this.newCa(now);
      this.rotations++;
    }
    const extText = cached?.data['ca-bundle'] ?? '';
    const ext = externalCas(extText, now);
    const next = mergeBundle(this.ca, this.bundle, this.renewBeforeMs, now);
    for (const e of ext) if (!next.some((c) => c.sha256 === e.sha256)) next.push(e);
    if (next.map((c) => c.sha256).join() !== this.bundle.map((c) => c.sha256).join()) {
      this.api.put('kubevirt-ca', { 'ca-bundle': next.map((c) => c.pem).join('') });
    }
    this.bundle = next;
    // cleanupExternalCACerts: Update to the template when cached (a no-op when it already is the template)
    if (cached) {
      if (this.strict) this.api.replaceObject(EXTERNAL, { metadata: { name: EXTERNAL, namespace: this.api.namespace, resourceVersion: '', uid: '', labels: { ...MANAGED } }, data: { 'ca-bundle': '' } });
      else if (extText !== '') this.api.put(EXTERNAL, { 'ca-bundle': '' });
    }
  }

  /** Is `sha256` in this cluster's kubevirt-ca now? */
  trusts(sha256: string): boolean {
    return this.bundle.some((c) => c.sha256 === sha256);
  }
}
