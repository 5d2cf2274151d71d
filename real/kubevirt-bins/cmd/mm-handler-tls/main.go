// mm-handler-tls answers one question with KubeVirt's own code: would a virt-handler of cluster SOURCE and a
// virt-handler of cluster TARGET complete the TLS handshake of a live migration right now?
//
//   - trust: each side's CA pool is KubeVirt's CA manager (pkg/util/tls NewCAManager) over an informer on its own
//     cluster's `kubevirt-ca` ConfigMap (pkg/controller NewKubeInformerFactory(...).KubeVirtCAConfigMap()), as
//     virt-handler builds it;
//   - TLS: the source dials with SetupTLSForVirtHandlerClients and its migration client certificate, the target
//     serves with SetupTLSForVirtHandlerServer and its server certificate, CN types {virt-handler, migration}
//     (virt-handler's defaults, cmd/virt-handler);
//   - certificates: the ones virt-operator issued into each cluster's Secrets
//     (kubevirt-virt-handler-migration-client-certs, kubevirt-virt-handler-server-certs), loaded by KubeVirt's
//     FileCertificateManager.
//
// The cluster config passed to the server is KubeVirt's default (testutils.NewFakeClusterConfigUsingKV over an
// empty KubeVirt): it only chooses ciphers and the minimum TLS version. Prints one JSON line
// {"ok":bool,"error":string,"tries":n}; with --wait it retries every 200 ms until the handshake succeeds or
// the time is up (the informers see a change of kubevirt-ca within that time, as virt-handler's would).
package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/certificate"
	v1 "kubevirt.io/api/core/v1"
	"kubevirt.io/client-go/kubecli"

	"kubevirt.io/kubevirt/pkg/certificates/bootstrap"
	"kubevirt.io/kubevirt/pkg/controller"
	"kubevirt.io/kubevirt/pkg/testutils"
	kvtls "kubevirt.io/kubevirt/pkg/util/tls"
)

type side struct {
	ca   kvtls.ClientCAManager
	cert certificate.Manager
}

// open watches kubevirt-ca on one cluster and loads one of virt-operator's certificate Secrets.
func open(ctx context.Context, kubeconfig, namespace, secret, dir string) (*side, error) {
	client, err := kubecli.GetKubevirtClientFromFlags("", kubeconfig)
	if err != nil {
		return nil, err
	}
	informer := controller.NewKubeInformerFactory(client.RestClient(), client, nil, namespace).KubeVirtCAConfigMap()
	go informer.Run(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		return nil, fmt.Errorf("%s: kubevirt-ca informer did not sync", kubeconfig)
	}
	s, err := client.CoreV1().Secrets(namespace).Get(ctx, secret, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	certFile, keyFile := filepath.Join(dir, secret+".crt"), filepath.Join(dir, secret+".key")
	if err := os.WriteFile(certFile, s.Data["tls.crt"], 0o600); err != nil {
		return nil, err
	}
	if err := os.WriteFile(keyFile, s.Data["tls.key"], 0o600); err != nil {
		return nil, err
	}
	mgr := bootstrap.NewFileCertificateManager(certFile, keyFile)
	go mgr.Start()
	deadline := time.Now().Add(10 * time.Second)
	for mgr.Current() == nil && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if mgr.Current() == nil {
		return nil, fmt.Errorf("%s: certificate %s did not load", kubeconfig, secret)
	}
	return &side{ca: kvtls.NewCAManager(informer.GetStore(), namespace, "kubevirt-ca"), cert: mgr}, nil
}

// handshake runs one loopback handshake: source as the migration client, target as the migration server.
func handshake(source, target *side) error {
	clusterConfig, _, _ := testutils.NewFakeClusterConfigUsingKV(&v1.KubeVirt{ObjectMeta: metav1.ObjectMeta{Name: "kubevirt", Namespace: "kubevirt"}})
	serverConfig := kvtls.SetupTLSForVirtHandlerServer(target.ca, target.cert, false, clusterConfig, []string{"virt-handler", "migration"})
	ln, err := tls.Listen("tcp", "127.0.0.1:0", serverConfig)
	if err != nil {
		return err
	}
	defer ln.Close()
	serverErr := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			serverErr <- err
			return
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		serverErr <- c.(*tls.Conn).Handshake()
	}()
	clientConfig := kvtls.SetupTLSForVirtHandlerClients(source.ca, source.cert, false)
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", ln.Addr().String(), clientConfig)
	if err != nil {
		<-serverErr
		return fmt.Errorf("source (client) side: %v", err)
	}
	defer conn.Close()
	// TLS 1.3: the server verifies the client certificate after the client's handshake ends; a read surfaces it.
	_ = conn.SetReadDeadline(time.Now().Add(2 * time.Second))
	if err := <-serverErr; err != nil {
		return fmt.Errorf("target (server) side: %v", err)
	}
	return nil
}

func main() {
	sourceKC := flag.String("source-kubeconfig", "", "kubeconfig of the source cluster (reads its kubevirt-ca and migration client certificate)")
	targetKC := flag.String("target-kubeconfig", "", "kubeconfig of the target cluster (reads its kubevirt-ca and handler server certificate)")
	namespace := flag.String("namespace", "kubevirt", "KubeVirt's namespace on both clusters")
	wait := flag.Duration("wait", 0, "retry until the handshake succeeds or this much time has passed")
	flag.Parse()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := json.NewEncoder(os.Stdout)
	dir, err := os.MkdirTemp("", "mm-handler-tls-")
	if err == nil {
		defer os.RemoveAll(dir)
	}
	var source, target *side
	if err == nil {
		source, err = open(ctx, *sourceKC, *namespace, "kubevirt-virt-handler-migration-client-certs", dir)
	}
	if err == nil {
		target, err = open(ctx, *targetKC, *namespace, "kubevirt-virt-handler-server-certs", dir)
	}
	if err != nil {
		_ = out.Encode(map[string]any{"ok": false, "error": "setup: " + err.Error(), "tries": 0})
		os.Exit(2)
	}
	deadline := time.Now().Add(*wait)
	for tries := 1; ; tries++ {
		err := handshake(source, target)
		if err == nil || time.Now().After(deadline) {
			msg := ""
			if err != nil {
				msg = err.Error()
			}
			_ = out.Encode(map[string]any{"ok": err == nil, "error": msg, "tries": tries})
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
}
