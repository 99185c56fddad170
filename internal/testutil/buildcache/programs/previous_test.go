package programs

import (
	"strings"
	"testing"
)

// TestReadPrevious: the repository's record names a full commit and a
// release version.
func TestReadPrevious(t *testing.T) {
	p, err := ReadPrevious()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(p.Version, "v0.") || len(p.Commit) != 40 {
		t.Errorf("the record: %+v", p)
	}
}

// TestParsePrevious: a record with a short commit, another version's
// form, or an unknown line is refused, naming the line or the field.
func TestParsePrevious(t *testing.T) {
	const commit = "93a958367b18187043ac5167e02d76c61f995c1a"
	for _, c := range []struct{ record, want string }{
		{"# c\n\ncommit " + commit + "\nversion v0.0.0-93a9583\n", ""},
		{"commit " + commit + "\nversion v0.1.0\n", ""},
		{"commit 93a9583\nversion v0.0.0-93a9583\n", "commit \"93a9583\""},
		{"commit " + commit + "\nversion devel\n", "version \"devel\""},
		{"commit " + commit + "\nversion v1.0.0\n", "version \"v1.0.0\""},
		{"commit " + commit + "\n", "version \"\""},
		{"commit " + commit + "\nversion v0.1.0\ntag v0.1.0\n", "x:3: \"tag v0.1.0\""},
	} {
		p, err := parsePrevious("x", []byte(c.record))
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%q: %v", c.record, err)
		case c.want == "" && p.Commit != commit:
			t.Errorf("%q: %+v", c.record, p)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%q: error %v, want one with %s", c.record, err, c.want)
		}
	}
}

// TestPreviousSourceMissingCommit: a commit the repository lacks (a
// shallow clone) is an error that says so and how to have it, before
// anything is built.
func TestPreviousSourceMissingCommit(t *testing.T) {
	t.Setenv(EnvPreviousCache, t.TempDir())
	_, err := PreviousSource(Previous{Commit: strings.Repeat("0", 40), Version: "v0.0.0-0000000"})
	if err == nil || !strings.Contains(err.Error(), "is not in the repository's history") || !strings.Contains(err.Error(), "git fetch --unshallow") {
		t.Errorf("error %v, want one naming the missing commit and git fetch --unshallow", err)
	}
}
