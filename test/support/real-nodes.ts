/**
 * Nodes for a real API server that has no kubelet: kube-controller-manager and kube-scheduler from the same build
 * (real/kube-bins), and kwok (real/kwok-bins) faking the kubelets of `count` nodes, with kwok's own "fast"
 * stages (read from the kwok module at test time): pods are scheduled, become Running and Ready at once and get an
 * IP from `podCidr`. Give each cluster a loopback CIDR of its own (127.1.N.0/24): a test reaches a pod's port at its
 * IP, where it can run the process that pod would run; the API server's pod proxy does not (it refuses loopback pod
 * IPs, "address not allowed": test/kubevirt.real.test.ts), so a pod read through it needs an IP on a veth of a
 * network namespace the test makes (test/readiness-network.netns.test.ts).
 * Containers never run: what a pod does is whatever the test starts at its IP.
 */
import { ChildProcess, execFileSync } from 'node:child_process';
import * as path from 'node:path';
import { goBinDir, spawnLogged, type RealCluster } from './real-kube';

const ROOT = path.resolve(__dirname, '..', '..');
/** kwok's stage files (node initialize and heartbeat, pod ready, complete and delete), from the module cache. */
function kwokStages(): string[] {
  const dir = execFileSync('go', ['list', '-m', '-f', '{{.Dir}}', 'sigs.k8s.io/kwok'], {
    cwd: path.join(ROOT, 'real', 'kwok-bins'), encoding: 'utf8', env: { ...process.env, PATH: `${process.env.PATH}:/usr/local/go/bin`, GOFLAGS: '-mod=mod' },
  }).trim();
  return ['node/fast/node-initialize.yaml', 'node/heartbeat/node-heartbeat.yaml', 'pod/fast/pod-ready.yaml', 'pod/fast/pod-complete.yaml', 'pod/fast/pod-delete.yaml']
    .map((f) => path.join(dir, 'kustomize', 'stage', f));
}

export class RealNodes {
  private readonly procs: ChildProcess[] = [];

  private constructor(readonly cluster: RealCluster) {}

  static async start(cluster: RealCluster, opts: { count: number; podCidr: string }): Promise<RealNodes> {
    const n = new RealNodes(cluster);
    const kc = cluster.kubeconfig();
    const bin = goBinDir('kwok-bins');
    n.launch('kube-controller-manager', path.join(cluster.binDir, 'kube-controller-manager'),
      ['--kubeconfig', kc, '--leader-elect=false', '--secure-port=0', '--controllers=*,-serviceaccount-token', `--cluster-name=${cluster.name}`]);
    n.launch('kube-scheduler', path.join(cluster.binDir, 'kube-scheduler'), ['--kubeconfig', kc, '--leader-elect=false', '--secure-port=0']);
    n.launch('kwok', path.join(bin, 'kwok'), ['--kubeconfig', kc, '--manage-all-nodes', '--cidr', opts.podCidr, '--node-ip', '127.0.0.1',
      ...kwokStages().flatMap((f) => ['--config', f])]);
    for (let i = 0; i < opts.count; i++) {
      const name = `${cluster.name}-node-${i}`;
      const node = {
        apiVersion: 'v1', kind: 'Node',
        // node 0 is a control-plane node (KubeVirt's install-strategy Job and infra pods require one), the rest workers
        metadata: { name, labels: { 'kubernetes.io/hostname': name, 'kubernetes.io/os': 'linux', 'kubernetes.io/arch': 'amd64',
          [i === 0 ? 'node-role.kubernetes.io/control-plane' : 'node-role.kubernetes.io/worker']: '' },
          annotations: { 'kwok.x-k8s.io/node': 'fake' } },
        status: { allocatable: { cpu: '32', memory: '256Gi', pods: '110' }, capacity: { cpu: '32', memory: '256Gi', pods: '110' } },
      };
      const r = await cluster.request('POST', '/api/v1/nodes', node);
      if (r.status !== 201) throw new Error(`node ${name}: HTTP ${r.status} ${r.text.slice(0, 300)}`);
    }
    return n;
  }

  private launch(name: string, bin: string, args: string[]): void {
    this.procs.push(spawnLogged(bin, args, path.join(this.cluster.dir, `${name}.log`)));
  }

  async stop(): Promise<void> {
    await Promise.all(this.procs.map((p) => new Promise<void>((resolve) => {
      if (p.exitCode !== null || p.signalCode !== null) { resolve(); return; }
      p.once('exit', () => resolve());
      p.kill('SIGKILL');
    })));
  }
}
