package version

import "testing"

func TestLinkTimeVersionWins(t *testing.T) {
	old := Version
	t.Cleanup(func() { Version = old })
	Version = "v9.8.7"
	if got := String(); got != "v9.8.7" {
		t.Fatalf("String() = %q, want the link-time version v9.8.7", got)
	}
	Version = ""
	if got := String(); got == "" {
		t.Fatal("String() is empty without a link-time version; want the build info's version or devel")
	}
}
