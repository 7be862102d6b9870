// Command kube-apiserver is the upstream Kubernetes API server, built from the version that
// go.mod pins, for the simulated cluster's `--control-plane kube` tier.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kube-apiserver/app"
)

func main() {
	os.Exit(cli.Run(app.NewAPIServerCommand()))
}
