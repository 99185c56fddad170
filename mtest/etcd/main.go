// Command etcd is the real etcd server, built from the module the project
// already depends on, for the multi-process tests in mtest/.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
