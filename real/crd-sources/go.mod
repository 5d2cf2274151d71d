// Pins the upstream Go modules whose CustomResourceDefinitions the real-API lane installs
// (test/support/real-crds.ts reads them from the module cache at test time; nothing of theirs is committed).
// Nothing here is built: `go mod download -json MODULE` in this directory fetches the pinned zip,
// checked against go.sum.
module migrationmesh.local/crd-sources

go 1.25.0

require (
	github.com/argoproj/argo-cd/v3 v3.5.7
	github.com/fluxcd/kustomize-controller v1.9.6
	github.com/fluxcd/source-controller v1.9.6
	github.com/prometheus-operator/prometheus-operator v0.85.0
	kubevirt.io/kubevirt v1.8.4
)
