// Package version tells which ckegen a binary is, for every binary's
// --version flag and the daemon's /version endpoint.
package version

import (
	"runtime"
	"runtime/debug"
)

// Version and Revision are set at link time with
// -ldflags "-X github.com/ckegen/ckegen/internal/version.Version=v1.2.3
// -X github.com/ckegen/ckegen/internal/version.Revision=0123456789ab".
// When Version is empty, String falls back to the module version from the
// build information, then to "devel"; when Revision is, Commit falls back
// to the VCS revision go build recorded, then to "unknown".
var (
	Version  = ""
	Revision = ""
)

// String returns the version of the running binary.
func String() string {
	if Version != "" {
		return Version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "devel"
}

// Commit returns the commit the binary was built from, 12 hex digits.
func Commit() string {
	if Revision != "" {
		return short(Revision)
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && s.Value != "" {
				return short(s.Value)
			}
		}
	}
	return "unknown"
}

func short(rev string) string { return rev[:min(len(rev), 12)] }

// Line is what --version prints for the binary name: its name, version,
// commit and Go version, one format for every binary.
func Line(name string) string {
	return name + " " + String() + " (commit " + Commit() + ", " + runtime.Version() + ")"
}
