// mm-kubevirt-crds prints KubeVirt's VirtualMachine and VirtualMachineInstance CustomResourceDefinitions as
// virt-operator creates them (pkg/virt-operator/resource/generate/components NewVirtualMachineCrd,
// NewVirtualMachineInstanceCrd: the versions, names, subresources and generated validation of KubeVirt v1.8.4).
// No YAML of them ships in the module; virt-operator builds them from this code at install. Prints one JSON
// array of the CRDs on stdout.
package main

import (
	"encoding/json"
	"fmt"
	"os"

	extv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"kubevirt.io/kubevirt/pkg/virt-operator/resource/generate/components"
)

func main() {
	var crds []*extv1.CustomResourceDefinition
	for _, make := range []func() (*extv1.CustomResourceDefinition, error){components.NewVirtualMachineCrd, components.NewVirtualMachineInstanceCrd} {
		crd, err := make()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		crds = append(crds, crd)
	}
	if err := json.NewEncoder(os.Stdout).Encode(crds); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
