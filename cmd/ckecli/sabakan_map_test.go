package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/tools/txtar"
)

// TestMapGolden runs every testdata/map/*.txtar case through `ckecli
// sabakan map`: the "args" flags plus, for each line of "runs", that run's
// flags; each run twice. want/NAME holds stdout, want/NAME.stderr stderr
// and the exit status.
func TestMapGolden(t *testing.T) {
	files, err := filepath.Glob("../../testdata/map/*.txtar")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no golden maps found")
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txtar"), func(t *testing.T) {
			runMapGolden(t, file)
		})
	}
}

func runMapGolden(t *testing.T, file string) {
	ar, err := txtar.ParseFile(file)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var base []string
	var runs [][]string
	want := map[string]string{}
	for _, f := range ar.Files {
		switch {
		case strings.HasPrefix(f.Name, "want/"):
			want[strings.TrimPrefix(f.Name, "want/")] = string(f.Data)
		case f.Name == "args":
			base = strings.Fields(string(f.Data))
		case f.Name == "runs":
			for _, line := range strings.Split(strings.TrimSpace(string(f.Data)), "\n") {
				runs = append(runs, strings.Fields(line))
			}
		case f.Name == "machines.txt":
			data, err := machinesFromTable(f.Data)
			if err != nil {
				t.Fatalf("machines.txt: %v", err)
			}
			writeFile(t, filepath.Join(dir, "machines.json"), data)
		default:
			writeFile(t, filepath.Join(dir, f.Name), f.Data)
		}
	}
	if len(runs) == 0 {
		t.Fatal(`no "runs" section`)
	}
	got := map[string]string{}
	for _, r := range runs {
		args := append([]string{"sabakan", "map"}, base...)
		args = append(args, r[1:]...)
		for i, a := range args {
			if strings.Contains(a, ".") && !strings.HasPrefix(a, "-") {
				if _, err := os.Stat(filepath.Join(dir, a)); err == nil {
					args[i] = filepath.Join(dir, a)
				}
			}
		}
		var outs [2][2]string
		for i := range outs {
			var stdout, stderr bytes.Buffer
			code := run(args, strings.NewReader(""), &stdout, &stderr)
			outs[i] = [2]string{stdout.String(), strings.ReplaceAll(stderr.String(), dir+"/", "") + "exit " + strconv.Itoa(code) + "\n"}
		}
		if outs[0] != outs[1] {
			t.Fatalf("run %s: two runs differ (nondeterminism):\n%s", r[0], cmp.Diff(outs[0], outs[1]))
		}
		got[r[0]] = showEscapes(outs[0][0])
		got[r[0]+".stderr"] = outs[0][1]
	}

	if *update {
		var kept []txtar.File
		for _, f := range ar.Files {
			if !strings.HasPrefix(f.Name, "want/") {
				kept = append(kept, f)
			}
		}
		for _, r := range runs {
			kept = append(kept,
				txtar.File{Name: "want/" + r[0], Data: []byte(got[r[0]])},
				txtar.File{Name: "want/" + r[0] + ".stderr", Data: []byte(got[r[0]+".stderr"])})
		}
		ar.Files = kept
		writeFile(t, file, txtar.Format(ar))
		return
	}
	for _, r := range runs {
		for _, name := range []string{r[0], r[0] + ".stderr"} {
			w, ok := want[name]
			if !ok {
				t.Errorf("want/%s is missing (run with -update to create it)", name)
				continue
			}
			if diff := cmp.Diff(w, got[name]); diff != "" {
				t.Errorf("want/%s mismatch (-want +got):\n%s", name, diff)
			}
		}
	}
}

// showEscapes writes ESC as \e, so that golden files read as text.
func showEscapes(s string) string { return strings.ReplaceAll(s, "\x1b", `\e`) }
