//go:build tools

// Package tools pins the upstream mains that bins.json builds, so `go mod tidy` keeps their module graph.
package tools

import (
	_ "github.com/distribution/distribution/v3/cmd/registry"
	_ "github.com/fluxcd/kustomize-controller"
	_ "github.com/fluxcd/source-controller"
)
