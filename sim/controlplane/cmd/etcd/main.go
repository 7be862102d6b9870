// Command etcd is the etcd server that go.mod pins, the storage of the simulated cluster's
// `--control-plane kube` tier.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
