// Package etcdclient is how ckegen and ckegenctl reach etcd: one set of flags
// (--config, --etcd-endpoints, --etcd-prefix), CKE's configuration file
// (github.com/cybozu-go/etcdutil's YAML) read by one rule, its TLS settings
// checked by one set of rules, and one client constructor, whose errors
// say why an etcd refuses or does not answer.
//
// The rule: the file of --config when it is given, else the default file
// (CKE's /etc/cke/config.yml) when it exists; then --etcd-endpoints and
// --etcd-prefix over the file's values. In reading the configuration the
// binaries differ only in what they do when no etcd is configured at all:
// cke runs an embedded etcd, ckegenctl uses etcdutil's default endpoint,
// http://127.0.0.1:2379. Their clients differ by Connect's options.
package etcdclient

import (
	"github.com/spf13/pflag"

	"github.com/ckegen/ckegen/internal/suggest"
	"github.com/ckegen/ckegen/storage"
)

// DefaultFile is CKE's etcd configuration file.
const DefaultFile = "/etc/cke/config.yml"

// Options are what the binaries' flags differ in.
type Options struct {
	// DefaultFile is read when --config is not given and it exists
	// (DefaultFile, unless a test points elsewhere); "" reads none.
	DefaultFile string
	// Unconfigured says, in --etcd-endpoints' help, what the binary does
	// when neither a file nor --etcd-endpoints names an etcd.
	Unconfigured string
	// Aliases adds --endpoints and --prefix, hidden: ckegenctl's first
	// spellings of --etcd-endpoints and --etcd-prefix, which scripts use.
	// suggest.FlagError still suggests them (--endpoint: --endpoints).
	Aliases bool
}

// Flags are the etcd flags of a binary; Load reads them.
type Flags struct {
	config, endpoints, prefix stringValue
}

// Register adds the etcd flags to fs.
func Register(fs *pflag.FlagSet, o Options) *Flags {
	f := &Flags{config: stringValue{value: o.DefaultFile}, prefix: stringValue{value: storage.DefaultPrefix}}
	alias := func(name string) string {
		if o.Aliases {
			return " (also --" + name + ")"
		}
		return ""
	}
	fs.Var(&f.config, "config", "CKE's etcd configuration file (github.com/cybozu-go/etcdutil's YAML: endpoints, prefix, timeout, username, password, "+
		"tls-ca[-file], tls-cert[-file], tls-key[-file]); the default is read when it exists")
	fs.Var(&f.endpoints, "etcd-endpoints", "etcd endpoints, comma separated, over the file's"+alias("endpoints")+"; with neither a file nor this flag: "+o.Unconfigured)
	fs.Var(&f.prefix, "etcd-prefix", "etcd key prefix, over the file's"+alias("prefix"))
	if o.Aliases {
		fs.Var(&f.endpoints, "endpoints", "the same as --etcd-endpoints")
		fs.Var(&f.prefix, "prefix", "the same as --etcd-prefix")
		for _, name := range []string{"endpoints", "prefix"} {
			_ = fs.MarkHidden(name)
			_ = fs.SetAnnotation(name, suggest.Suggested, []string{"true"})
		}
	}
	return f
}

// stringValue is a string flag that knows whether it was given, whichever
// of its names was used.
type stringValue struct {
	value string
	set   bool
}

func (v *stringValue) String() string { return v.value }
func (v *stringValue) Type() string   { return "string" }

func (v *stringValue) Set(s string) error {
	v.value, v.set = s, true
	return nil
}
