/**
 * Running the gateway image the way a generated Deployment runs it, with podman: the containers' command,
 * args, user, groups, capabilities, read-only root and volumes come from the Deployment in dist/, nothing
 * from this file. Used by test/gateway-image.image.test.ts.
 */
import { spawnSync } from 'child_process';
import * as fs from 'fs';
import * as path from 'path';
import * as YAML from 'yaml';

// the build/engine helpers `npm run image` uses (plain JS, shared)
export const image: {
  ROOT: string; OUT_DIR: string; MiB: number;
  have(cmd: string): boolean; isRoot(): boolean;
  findEngine(): { skip?: string; name: string; bin: string; env: NodeJS.ProcessEnv; conf?: string };
  ensureBases(engine: object, log?: (m: string) => void): Array<{ role: string; name: string; size: number; standIn: boolean; source: string }>;
  imageInspect(engine: object, name: string): { id: string; size: number; labels: Record<string, string> } | undefined;
  contextHash(baseIds?: string[]): string;
  buildImage(engine: object, o: { tags: string[]; logFile?: string }): { seconds: number; id: string };
  imageLayers(engine: object, name: string): Array<{ size: number; createdBy: string }>;
} = require('../../scripts/image/lib.js');

export interface GatewayPod {
  file: string;
  deployment: any;
  configMap: any;
  /** Multus attachments: interface name and its addresses */
  networks: Array<{ interface: string; ips: string[] }>;
}

/** The first (sorted) generated gateway Deployment in dist/ that has a failover sidecar, and its ConfigMap. */
export function findGatewayPod(distDir: string): GatewayPod {
  const files: string[] = [];
  const walk = (d: string) => {
    for (const e of fs.readdirSync(d, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      if (e.isDirectory()) walk(path.join(d, e.name));
      else if (/^Deployment\..*migration-mesh-gateway-0\.yaml$/.test(e.name)) files.push(path.join(d, e.name));
    }
  };
  walk(distDir);
  for (const file of files) {
    const deployment = YAML.parse(fs.readFileSync(file, 'utf8'));
    const spec = deployment.spec.template.spec;
    if (!spec.containers.some((c: any) => c.name === 'failover')) continue;
    const cmName = spec.volumes.find((v: any) => v.name === 'config')?.projected.sources.find((s: any) => s.configMap)?.configMap.name;
    const cmFile = path.join(path.dirname(file), `ConfigMap.${deployment.metadata.namespace}.${cmName}.yaml`);
    const networks = JSON.parse(deployment.spec.template.metadata.annotations['k8s.v1.cni.cncf.io/networks'])
      .map((n: any) => ({ interface: n.interface, ips: n.ips }));
    return { file, deployment, configMap: YAML.parse(fs.readFileSync(cmFile, 'utf8')), networks };
  }
  throw new Error(`no gateway Deployment with a failover sidecar under ${distDir}`);
}

function openssl(args: string[], cwd: string): void {
  const r = spawnSync('openssl', args, { cwd, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`openssl ${args.join(' ')}: ${r.stderr}`);
}

/** Where the emulation keeps a projected ConfigMap/Secret volume of the pod: `config` (the runtime's) in `configDir`, another beside it. */
export function configVolumeDir(configDir: string, volume: string): string {
  return volume === 'config' ? configDir : `${configDir}-${volume}`;
}

/**
 * Every projected ConfigMap/Secret volume of the pod as the kubelet writes it (`config`, the runtime's, in
 * `dir`; `config-json`, `keepalived-config` beside it, configVolumeDir): the ConfigMap keys and the TLS
 * Secret's keys (a throwaway fleet CA and a gateway certificate naming spiffe://<fleet>/cluster/<cluster>),
 * each volume only the items it projects, files owned by root, group fsGroup, mode defaultMode.
 */
export function writeConfigVolume(pod: GatewayPod, dir: string, opts: { peerDir?: string } = {}): void {
  const spec = pod.deployment.spec.template.spec;
  const fsGroup: number = spec.securityContext.fsGroup;
  const cfg = JSON.parse(pod.configMap.data['config.json']);
  const pki = fs.mkdtempSync(path.join(dir, '..', 'pki-'));
  openssl(['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', 'ca.key', '-out', 'ca.crt',
    '-days', '2', '-subj', '/CN=fleet-ca', '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign'], pki);
  openssl(['req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', 'tls.key', '-out', 'tls.csr', '-subj', `/CN=${cfg.cluster}`], pki);
  fs.writeFileSync(path.join(pki, 'ext'), `subjectAltName=URI:spiffe://${cfg.fleet}/cluster/${cfg.cluster}\nextendedKeyUsage=serverAuth,clientAuth\n`);
  openssl(['x509', '-req', '-in', 'tls.csr', '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial', '-out', 'tls.crt', '-days', '2', '-extfile', 'ext'], pki);
  // optionally a first peer's fleet certificate from the same CA (ca.crt, tls.crt, tls.key in opts.peerDir), to publish as that peer
  if (opts.peerDir) {
    const peer = cfg.peers[0].cluster;
    openssl(['req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', 'peer.key', '-out', 'peer.csr', '-subj', `/CN=${peer}`], pki);
    fs.writeFileSync(path.join(pki, 'peer-ext'), `subjectAltName=URI:spiffe://${cfg.fleet}/cluster/${peer}\nextendedKeyUsage=serverAuth,clientAuth\n`);
    openssl(['x509', '-req', '-in', 'peer.csr', '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial', '-out', 'peer.crt', '-days', '2', '-extfile', 'peer-ext'], pki);
    fs.mkdirSync(opts.peerDir, { recursive: true });
    for (const [from, to] of [['ca.crt', 'ca.crt'], ['peer.crt', 'tls.crt'], ['peer.key', 'tls.key']]) fs.copyFileSync(path.join(pki, from), path.join(opts.peerDir, to));
  }
  const secret: Record<string, string> = {};
  for (const k of ['ca.crt', 'tls.crt', 'tls.key']) secret[k] = fs.readFileSync(path.join(pki, k), 'utf8');
  fs.rmSync(pki, { recursive: true, force: true });
  for (const v of spec.volumes.filter((x: any) => x.projected && x.projected.sources.every((src: any) => src.secret || src.configMap))) {
    const root = configVolumeDir(dir, v.name);
    fs.mkdirSync(root, { recursive: true, mode: 0o755 });
    fs.chmodSync(root, 0o755);
    for (const src of v.projected.sources) {
      const data = src.configMap ? pod.configMap.data : secret;
      for (const item of (src.configMap ?? src.secret).items) {
        const f = path.join(root, item.path);
        fs.mkdirSync(path.dirname(f), { recursive: true });
        fs.writeFileSync(f, data[item.key]);
        fs.chownSync(f, 0, fsGroup);
        fs.chmodSync(f, v.projected.defaultMode);
      }
    }
  }
}

/**
 * A projected service-account token volume (`serviceAccountToken`, `configMap` kube-root-ca.crt,
 * `downwardAPI` namespace) as the kubelet writes it: one file per source's path, owned root:fsGroup, mode
 * defaultMode. Returns the file names written.
 */
export function writeTokenVolume(pod: GatewayPod, volume: string, dir: string, o: { token: string; caCrt: string; namespace: string }): string[] {
  const spec = pod.deployment.spec.template.spec;
  const projected = spec.volumes.find((v: any) => v.name === volume).projected;
  const files: string[] = [];
  const write = (rel: string, text: string) => {
    const f = path.join(dir, rel);
    fs.writeFileSync(f, text);
    fs.chownSync(f, 0, spec.securityContext.fsGroup);
    fs.chmodSync(f, projected.defaultMode);
    files.push(rel);
  };
  fs.mkdirSync(dir, { recursive: true });
  for (const src of projected.sources) {
    if (src.serviceAccountToken) write(src.serviceAccountToken.path, o.token);
    else if (src.configMap?.name === 'kube-root-ca.crt') for (const it of src.configMap.items) write(it.path, o.caCrt);
    else if (src.downwardAPI) for (const it of src.downwardAPI.items) write(it.path, it.fieldRef.fieldPath === 'metadata.namespace' ? o.namespace : '');
    else throw new Error(`${volume}: unexpected projection ${JSON.stringify(src)}`);
  }
  return files;
}

/** Kubernetes quantity (Mi, Gi, Ki) to podman's byte-suffixed form. */
function memory(q: string): string {
  const m = /^(\d+)(Ki|Mi|Gi)?$/.exec(q);
  if (!m) throw new Error(`memory quantity ${q}`);
  return `${m[1]}${{ Ki: 'k', Mi: 'm', Gi: 'g' }[m[2] as 'Ki' | 'Mi' | 'Gi'] ?? 'b'}`;
}

/**
 * podman run arguments for one container of the pod: its image, command/args, the effective user and group
 * (container over pod securityContext), fsGroup as a supplementary group, capabilities (drop, then add),
 * read-only root without podman's own tmpfs extras, no-new-privileges, memory limit, and its volume mounts
 * (config volume: the directory, read-only; emptyDir medium Memory: tmpfs of its sizeLimit, mode 0777; volumes
 * named in `volumeDirs`: that host directory).
 * Options go before the image, so extra podman flags can be appended to args[0..].
 */
export interface RunOptions {
  imageName: string; name: string; netns: string; configDir: string; command?: string[];
  /**
   * Host directories for volumes by name: a projected volume other than the config (e.g. the trust token),
   * or an emptyDir two containers of the pod share (bind-mounted instead of a per-container tmpfs).
   */
  volumeDirs?: Record<string, string>;
}
export function podmanRunArgs(pod: GatewayPod, containerName: string, o: RunOptions): string[] {
  const spec = pod.deployment.spec.template.spec;
  const c = [...(spec.initContainers ?? []), ...spec.containers].find((x: any) => x.name === containerName);
  if (!c) throw new Error(`no container ${containerName} in ${pod.file}`);
  const psc = spec.securityContext ?? {};
  const sc = c.securityContext ?? {};
  const uid = sc.runAsUser ?? psc.runAsUser ?? 0;
  const gid = sc.runAsGroup ?? psc.runAsGroup ?? 0;
  const args = ['run', '--name', o.name, '--network', `ns:/run/netns/${o.netns}`, '--user', `${uid}:${gid}`];
  if (psc.fsGroup != null) args.push('--group-add', String(psc.fsGroup));
  for (const cap of sc.capabilities?.drop ?? []) args.push('--cap-drop', cap.toLowerCase());
  for (const cap of sc.capabilities?.add ?? []) args.push('--cap-add', cap.toLowerCase());
  if (sc.readOnlyRootFilesystem) args.push('--read-only', '--read-only-tmpfs=false');
  if (sc.allowPrivilegeEscalation === false) args.push('--security-opt', 'no-new-privileges');
  if (sc.privileged) args.push('--privileged');
  if (c.resources?.limits?.memory) args.push('--memory', memory(c.resources.limits.memory));
  for (const m of c.volumeMounts ?? []) {
    const v = spec.volumes.find((x: any) => x.name === m.name);
    const own = o.volumeDirs?.[m.name];
    if (own) args.push('-v', `${own}:${m.mountPath}:${v.projected || m.readOnly ? 'ro' : 'rw'}`);
    else if (v.projected?.sources.every((src: any) => src.secret || src.configMap)) args.push('-v', `${configVolumeDir(o.configDir, m.name)}:${m.mountPath}:ro`);
    else if (v.emptyDir) args.push('--tmpfs', `${m.mountPath}:rw,mode=0777${v.emptyDir.sizeLimit ? `,size=${memory(v.emptyDir.sizeLimit)}` : ''}`);
    else throw new Error(`volume ${m.name}: only ConfigMap/Secret projections, emptyDirs and volumes given in volumeDirs are emulated`);
  }
  // o.command: a probe with the same settings in place of the container's own command and args
  args.push('--entrypoint', JSON.stringify(o.command ?? c.command), o.imageName, ...(o.command ? [] : c.args ?? []));
  return args;
}

/** The capability bit numbers of /proc/<pid>/status's Cap* fields, by name (linux/capability.h). */
export const CAP_BITS: Record<string, number> = {
  CHOWN: 0, DAC_OVERRIDE: 1, FOWNER: 3, KILL: 5, SETGID: 6, SETUID: 7, NET_BIND_SERVICE: 10, NET_ADMIN: 12, NET_RAW: 13, SYS_ADMIN: 21,
};
export function capMask(names: string[]): bigint {
  return names.reduce((m, n) => m | (1n << BigInt(CAP_BITS[n])), 0n);
}

/** Uid, Gid, Groups, CapEff, CapPrm, CapBnd and NoNewPrivs of a process status text. */
export function procStatus(text: string): { uid: number; gid: number; groups: number[]; capEff: bigint; capPrm: bigint; capBnd: bigint; noNewPrivs: number } {
  const f = (k: string) => {
    const m = new RegExp(`^${k}:\\s*(.*)$`, 'm').exec(text);
    if (!m) throw new Error(`no ${k} in status`);
    return m[1].trim();
  };
  return {
    uid: Number(f('Uid').split(/\s+/)[1]), // effective
    gid: Number(f('Gid').split(/\s+/)[1]),
    groups: f('Groups').split(/\s+/).filter(Boolean).map(Number),
    capEff: BigInt(`0x${f('CapEff')}`),
    capPrm: BigInt(`0x${f('CapPrm')}`),
    capBnd: BigInt(`0x${f('CapBnd')}`),
    noNewPrivs: Number(f('NoNewPrivs')),
  };
}
