// Command mm-oci-push pushes a directory to an OCI registry as a Flux artifact, as `flux push artifact` does:
// the same library (github.com/fluxcd/pkg/oci), the same tar+gzip layer and media types, the source and
// revision annotations source-controller reports. The flux CLI itself does not build from the Go module proxy
// (its manifests are generated at release time), so the real-API lane pushes with this.
//
// Usage: mm-oci-push [-insecure] -source URL -revision REV DIR oci://HOST/REPO:TAG
// Prints the pushed digest reference (HOST/REPO@sha256:...) on stdout.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/fluxcd/pkg/oci"
	"github.com/google/go-containerregistry/pkg/crane"
)

func main() {
	insecure := flag.Bool("insecure", false, "talk plain HTTP to the registry (a loopback test registry)")
	source := flag.String("source", "", "source URL recorded in org.opencontainers.image.source")
	revision := flag.String("revision", "", "revision recorded in org.opencontainers.image.revision")
	flag.Parse()
	if flag.NArg() != 2 || !strings.HasPrefix(flag.Arg(1), "oci://") {
		fmt.Fprintln(os.Stderr, "usage: mm-oci-push [-insecure] -source URL -revision REV DIR oci://HOST/REPO:TAG")
		os.Exit(2)
	}
	opts := oci.DefaultOptions()
	if *insecure {
		opts = append(opts, crane.Insecure)
	}
	client := oci.NewClient(opts)
	ref, err := client.Push(context.Background(), strings.TrimPrefix(flag.Arg(1), "oci://"), flag.Arg(0),
		oci.WithPushMetadata(oci.Metadata{Source: *source, Revision: *revision}))
	if err != nil {
		fmt.Fprintf(os.Stderr, "mm-oci-push: %v\n", err)
		os.Exit(1)
	}
	fmt.Println(ref)
}
