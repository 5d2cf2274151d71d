import { ApiObject } from 'cdk8s';
import { Construct } from 'constructs';
import { InvalidPropsError } from '../../src/base/errors';
import { gatewayIdentityUri } from '../../src/gateway/pod';

/** Name of the Secret cert-manager writes for the gateway certificate. */
export const DEFAULT_GATEWAY_TLS_SECRET = 'migration-mesh-gateway-tls';

/**
 * Properties for `GatewayTls`.
 */
export interface GatewayTlsProps {
  /** Namespace of the gateway pods (the Certificate and its Secret live there). */
  readonly namespace: string;
  /** Fleet name: first part of the identity URI. */
  readonly fleet: string;
  /** This cluster's name: the identity the peers check (`spiffe://<fleet>/cluster/<cluster>`). */
  readonly cluster: string;
  /**
   * Where the key material comes from:
   * - `issuer`: a cert-manager `Certificate` signed by the named `Issuer`/`ClusterIssuer` (every cluster's
   *   issuer must sign with the same fleet CA, e.g. a CA issuer holding the same CA key pair);
   * - `secret`: an existing Secret with `ca.crt`, `tls.crt`, `tls.key`, managed outside the fleet;
   * - `plaintext`: none (explicit opt-in, trusted networks only).
   */
  readonly source:
  | { readonly kind: 'issuer'; readonly name: string; readonly issuerKind: 'Issuer' | 'ClusterIssuer' }
  | { readonly kind: 'secret'; readonly secretName: string }
  | { readonly kind: 'plaintext' };
  /**
   * Name of the Secret cert-manager writes (issuer source only).
   *
   * @default migration-mesh-gateway-tls
   */
  readonly secretName?: string;
  /**
   * Certificate lifetime (Go duration). The runtime reloads rotated files without a restart.
   *
   * @default 2160h (90 days)
   */
  readonly duration?: string;
  /**
   * Renew this long before expiry (Go duration).
   *
   * @default 720h (30 days)
   */
  readonly renewBefore?: string;
  /**
   * Labels for the Certificate.
   *
   * @default - none
   */
  readonly labels?: Record<string, string>;
}

/**
 * The gateway's mTLS material. By default a cert-manager `Certificate` (cert-manager.io/v1) whose only
 * SAN is the URI `spiffe://<fleet>/cluster/<cluster>`, an ECDSA P-256 key rotated on every renewal,
 * usable as TLS server and client. The synthesized YAML never carries a private key: cert-manager
 * creates the key inside the cluster, or the admin provides the Secret.
 */
export class GatewayTls extends Construct {
  /** Secret to mount (`ca.crt`, `tls.crt`, `tls.key`), or undefined for plaintext. */
  public readonly secretName?: string;
  /** The Certificate object (issuer source only); L1: a cert-manager CRD, which cdk8s-plus-28 has no construct for. */
  public readonly certificate?: ApiObject;

  constructor(scope: Construct, id: string, props: GatewayTlsProps) {
    super(scope, id);
    const src = props.source;
    if (src.kind === 'plaintext') return;
    if (src.kind === 'secret') {
      if (!src.secretName) throw new InvalidPropsError({ code: 'prop-invalid', path: 'tls.secretName', message: 'tls.secretName is empty', fix: 'name the Secret holding ca.crt, tls.crt and tls.key' });
      this.secretName = src.secretName;
      return;
    }
    if (!src.name) throw new InvalidPropsError({ code: 'prop-invalid', path: 'tls.issuerRef.name', message: 'tls.issuerRef.name is empty', fix: 'name the cert-manager Issuer or ClusterIssuer of the fleet CA' });
    this.secretName = props.secretName ?? DEFAULT_GATEWAY_TLS_SECRET;
    this.certificate = new ApiObject(this, 'Certificate', {
      apiVersion: 'cert-manager.io/v1',
      kind: 'Certificate',
      metadata: { name: 'migration-mesh-gateway', namespace: props.namespace, labels: props.labels },
      spec: {
        secretName: this.secretName,
        // cert-manager requires at least one of commonName/dnsNames/uris/ipAddresses/...: the URI SAN is the identity
        uris: [gatewayIdentityUri(props.fleet, props.cluster)],
        duration: props.duration ?? '2160h',
        renewBefore: props.renewBefore ?? '720h',
        privateKey: { algorithm: 'ECDSA', size: 256, rotationPolicy: 'Always' },
        // an explicit list replaces cert-manager's defaults: keep the key usage an ECDSA TLS key needs
        usages: ['digital signature', 'server auth', 'client auth'],
        issuerRef: { name: src.name, kind: src.issuerKind, group: 'cert-manager.io' },
      },
    });
  }
}
