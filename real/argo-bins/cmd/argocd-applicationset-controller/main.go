// argocd-applicationset-controller is Argo CD v3.2.12's own ApplicationSet controller: its command
// (cmd/argocd-applicationset-controller/commands), in a main of our own because Argo CD builds all its programs
// into one multicall binary whose main embeds the web UI, which the module proxy does not carry.
package main

import (
	"os"

	command "github.com/argoproj/argo-cd/v3/cmd/argocd-applicationset-controller/commands"
)

func main() {
	if err := command.NewCommand().Execute(); err != nil {
		os.Exit(1)
	}
}
