// Package version tells which ckegen a binary is, for every binary's
// --version flag and the daemon's /version endpoint.
package version

import "runtime/debug"

// Version is set at link time with
// -ldflags "-X github.com/ckegen/ckegen/internal/version.Version=v1.2.3".
// When it is empty, String falls back to the module version from the build
// information, then to "devel".
var Version = ""

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
