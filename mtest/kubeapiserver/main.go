// Command kubeapiserver is kube-apiserver, built from k8s.io/kubernetes as a
// library, for the tests that need a real Kubernetes API server.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kube-apiserver/app"
)

func main() {
	os.Exit(cli.Run(app.NewAPIServerCommand()))
}
