/**
 * KubeVirt's own virt-operator (kubevirt.io/kubevirt v1.8.4, built by scripts/ensure-go-bins.js from
 * real/kubevirt-bins) run out of cluster against a real API server (test/support/real-kube.ts), so that
 * `kubevirt-ca` and `kubevirt-external-ca` are created, merged and emptied by KubeVirt's code.
 *
 * What stands in for the kubelet: virt-operator creates an install-strategy Job (a new one whenever the KubeVirt CR's
 * configuration changes), which no kubelet runs; each Job's command (`virt-operator --dump-install-strategy`) is run
 * here with the Job's own environment, as its pod would, within a second of the Job's creation.
 * The API server runs without webhook admission (virt-operator registers validating webhooks whose service has no
 * endpoints here). Nothing else is modelled: virt-api, virt-controller and virt-handler Deployments are created and
 * never become ready (no kubelet), which does not hold back the certificate step (virt-operator reconciles
 * certificates before it waits for readiness: https://github.com/kubevirt/kubevirt/blob/d923fdb815cd2016ddaebdaaa51db04133576d72/pkg/virt-operator/resource/apply/reconcile.go#L496).
 * Each operator listens on its own loopback address (its webhook server binds the fixed port 8444).
 */
import { ChildProcess, execFile } from 'node:child_process';
import { promisify } from 'node:util';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as path from 'node:path';
import { installCrds, KubeObject, serverSideApply } from './real-apply';
import { moduleDir, upstreamCrds } from './real-crds';
import { parseAllDocuments } from 'yaml';
import { goBinDir, spawnLogged, type RealCluster } from './real-kube';

const execFileAsync = promisify(execFile);

export const VIRT_OPERATOR_IMAGE = 'quay.io/kubevirt/virt-operator:v1.8.4';
/** kube-apiserver flags virt-operator needs here: no webhook admission (see the header). */
export const NO_WEBHOOKS = ['--disable-admission-plugins=ServiceAccount,ValidatingAdmissionWebhook,MutatingAdmissionWebhook'];

/** Where virt-operator and mm-handler-tls are. */
export const kubevirtBinDir = () => goBinDir('kubevirt-bins');

async function until<T>(what: string, ms: number, probe: () => Promise<T | undefined>, log?: string, fatal?: () => string | undefined): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await probe().catch(() => undefined);
    if (v !== undefined) return v;
    const f = fatal?.();
    if (f) throw new Error(`${what}: ${f}`);
    if (Date.now() > deadline) {
      const tail = log && fs.existsSync(log) ? `\n${fs.readFileSync(log, 'utf8').trim().split('\n').slice(-20).join('\n')}` : '';
      throw new Error(`${what}: not after ${ms} ms${tail}`);
    }
    await new Promise((r) => setTimeout(r, 250));
  }
}

/** The ports virt-operator listens on whatever its --listen address (application.go: metrics 8186, webhooks 8444). */
const OPERATOR_PORTS = [8186, 8444];

/** Whether every one of virt-operator's ports can be bound on `address` now. */
async function portsFree(address: string): Promise<boolean> {
  for (const port of OPERATOR_PORTS) {
    const free = await new Promise<boolean>((resolve) => {
      const srv = net.createServer();
      srv.once('error', () => resolve(false));
      srv.listen(port, address, () => srv.close(() => resolve(true)));
    });
    if (!free) return false;
  }
  return true;
}

/**
 * A loopback address for a virt-operator: the suite's `preferred` 127.0.0.N, or when another process holds its
 * ports there, the first 127.0.K.N (K = 1..63) where they are free. Suites fix their addresses so that they never
 * meet each other within a run; a second run on the same machine (a suite run by hand beside `npm test`) would
 * otherwise start a virt-operator without its listeners, which then never answers (a CI run failed so).
 */
async function freeListenAddress(preferred: string): Promise<string> {
  const [a, b, , d] = preferred.split('.');
  for (let k = 0; k < 64; k++) {
    const address = k === 0 ? preferred : `${a}.${b}.${k}.${d}`;
    if (await portsFree(address)) return address;
  }
  throw new Error(`virt-operator: ports ${OPERATOR_PORTS.join(', ')} taken on ${preferred} and 63 other loopback addresses`);
}

/** Options of a KubeVirt install. */
export interface KubevirtOptions {
  /** Loopback address of the operator's listeners (8186 metrics, 8444 webhooks), one per cluster; another if its ports are taken (freeListenAddress). */
  readonly listen: string;
  /** spec.certificateRotateStrategy.selfSigned.ca of the KubeVirt CR. [KubeVirt's default: 168h, renewBefore 33.6h, a fifth (GetCARenewBefore)] */
  readonly ca?: { duration: string; renewBefore: string };
}

type StrategyJob = { metadata: { uid: string }; spec: { template: { spec: { containers: Array<{ env?: Array<{ name: string; value?: string }> }> } } } };

export class RealKubevirt {
  private proc?: ChildProcess;
  readonly log: string;

  constructor(readonly cluster: RealCluster, readonly options: KubevirtOptions) {
    this.log = path.join(cluster.dir, 'virt-operator.log');
  }

  /** The KubeVirt CRD, the namespace, the operator, the CR, then the install strategy; resolves when kubevirt-ca exists. */
  async install(): Promise<void> {
    const kv = upstreamCrds().find((c) => c.crd.metadata.name === 'kubevirts.kubevirt.io');
    if (!kv) throw new Error('no KubeVirt CRD');
    await installCrds(this.cluster, [kv.crd]);
    await serverSideApply(this.cluster, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'kubevirt' } }, 'platform-installer');
    // KubeVirt's install manifests ship the PriorityClass its pods ask for (virt-operator does not create it)
    const pc = path.join(moduleDir('kubevirt.io/kubevirt'), 'manifests', 'generated', 'kubevirt-priority-class.yaml');
    for (const d of parseAllDocuments(fs.readFileSync(pc, 'utf8')).map((x) => x.toJS() as KubeObject).filter(Boolean)) await serverSideApply(this.cluster, d, 'platform-installer');
    await this.start();
    await serverSideApply(this.cluster, this.kubevirtCr(), 'platform-installer');
    await this.dumpInstallStrategy();
    this.jobs = this.strategyJobLoop();
    await until(`kubevirt-ca of ${this.cluster.name}`, 120_000, async () => ((await this.configMap('kubevirt-ca'))?.data?.['ca-bundle'] ? true : undefined), this.log);
  }

  kubevirtCr(ca = this.options.ca): KubeObject {
    return {
      apiVersion: 'kubevirt.io/v1', kind: 'KubeVirt', metadata: { name: 'kubevirt', namespace: 'kubevirt' },
      spec: {
        imagePullPolicy: 'IfNotPresent',
        configuration: { developerConfiguration: { featureGates: [] } },
        ...(ca ? { certificateRotateStrategy: { selfSigned: { ca: { duration: ca.duration, renewBefore: ca.renewBefore } } } } : {}),
      },
    };
  }

  /**
   * Sets the CR's CA rotation (as the installer that applied it). virt-operator rotates its CA at once: the CA
   * Secret's `kubevirt.io/duration` annotation no longer matches (apply/core.go `certificationNeedsRotation`).
   */
  async setCa(ca: { duration: string; renewBefore: string }): Promise<void> {
    await serverSideApply(this.cluster, this.kubevirtCr(ca), 'platform-installer');
  }

  /** The address virt-operator listens on (options.listen unless its ports were taken). */
  listen = '';

  private async start(): Promise<void> {
    this.listen = await freeListenAddress(this.options.listen);
    this.proc = spawnLogged(path.join(kubevirtBinDir(), 'virt-operator'), ['--kubeconfig', this.cluster.kubeconfig(), '--listen', this.listen, '--v', '2'],
      this.log, { ...process.env, VIRT_OPERATOR_IMAGE });
  }

  private readonly dumped = new Set<string>();
  private jobs?: Promise<void>;
  private stopping = false;

  /** The install-strategy Jobs not run yet (virt-operator makes a new one whenever the KubeVirt CR's config changes). */
  private async pendingJobs(): Promise<StrategyJob[]> {
    const r = await this.cluster.request('GET', '/apis/batch/v1/namespaces/kubevirt/jobs');
    return ((r.json?.items ?? []) as StrategyJob[]).filter((j) => !this.dumped.has(j.metadata.uid));
  }

  /** Each install-strategy Job run: how long it took, and the longest the event loop went without a turn meanwhile. */
  readonly jobRuns: Array<{ ms: number; loopGapMs: number }> = [];

  /**
   * What an install-strategy Job's pod would run: the Job's command with the Job's environment. Run as a child the
   * event loop does not wait on: it runs beside the test's own requests (a KubeVirt CR the test applies makes a new
   * Job), and a loop held for the seconds a dump takes under load stalls any TLS handshake in flight until the API
   * server drops it at its 32 s deadline (`ReadHeaderTimeout`): "Client network socket disconnected before secure
   * TLS connection was established", as a CI run with two CPU hogs beside it met in kubevirt-real's status test.
   */
  private async runJob(job: StrategyJob): Promise<void> {
    // GOGC 400 for this short batch process only (its heap is gone seconds later): a dump cost 6.5 CPU-s on average
    // at Go's default and 4.6 at 400, and kubevirt-real runs 7-10 of them (docs/dev/lab/2026-12-03-real-lane-cpu.md)
    const env: NodeJS.ProcessEnv = { GOGC: '400', ...process.env };
    for (const e of job.spec.template.spec.containers[0].env ?? []) env[e.name] = e.value ?? '';
    const start = Date.now();
    let last = start;
    let gap = 0;
    const tick = setInterval(() => { gap = Math.max(gap, Date.now() - last); last = Date.now(); }, 50);
    try {
      await execFileAsync(path.join(kubevirtBinDir(), 'virt-operator'), ['--kubeconfig', this.cluster.kubeconfig(), '--dump-install-strategy', '--listen', this.listen],
        { env, timeout: 120_000, maxBuffer: 64 * 2 ** 20 });
    } finally {
      clearInterval(tick);
    }
    const end = Date.now();
    this.jobRuns.push({ ms: end - start, loopGapMs: Math.max(gap, end - last) });
    this.dumped.add(job.metadata.uid);
  }

  private async dumpInstallStrategy(): Promise<void> {
    const jobs = await until(`install-strategy Job of ${this.cluster.name}`, 120_000, async () => {
      const j = await this.pendingJobs();
      return j.length ? j : undefined;
    }, this.log, () => this.bindFailure());
    for (const j of jobs) await this.runJob(j);
  }

  /** virt-operator's own word that it could not listen (it logs it and runs on without that listener), if it said so. */
  private bindFailure(): string | undefined {
    const line = fs.existsSync(this.log) ? fs.readFileSync(this.log, 'utf8').split('\n').find((l) => /address already in use/.test(l)) : undefined;
    return line && `virt-operator could not listen on ${this.listen} (another process took the port after the probe): ${line}`;
  }

  /** Runs each new install-strategy Job as its pod would, every second, until stop(). */
  private async strategyJobLoop(): Promise<void> {
    while (!this.stopping) {
      for (const j of await this.pendingJobs().catch(() => [])) if (!this.stopping) await this.runJob(j);
      await new Promise((r) => setTimeout(r, 1000));
    }
  }

  async configMap(name: string): Promise<{ metadata: Record<string, any>; data?: Record<string, string> } | undefined> {
    const r = await this.cluster.request('GET', `/api/v1/namespaces/kubevirt/configmaps/${name}`);
    return r.status === 200 ? r.json : undefined;
  }

  async stop(): Promise<void> {
    this.stopping = true;
    await this.jobs;
    const p = this.proc;
    if (!p || p.exitCode !== null || p.signalCode !== null) return;
    const exited = new Promise<void>((r) => p.once('exit', () => r()));
    p.kill('SIGTERM');
    const t = setTimeout(() => p.kill('SIGKILL'), 5000);
    await exited;
    clearTimeout(t);
  }
}
