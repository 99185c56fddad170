// Command deadcheck runs golang.org/x/tools/cmd/deadcode (pinned in this
// module) over every binary of the repository and fails when a function
// none of them reaches is found outside the test harnesses:
//
//	deadcheck -root .. -modfile go.mod -exclude '^(mtest|internal/testutil)/' \
//	    '.=./cmd/... ./internal/ckebump' 'ckeserver=./cmd/cke'
//
// Each argument is a run: a module directory (relative to -root) and the
// main packages that are its binaries. Each run loads its binaries and
// every other package of its module but those -exclude matches, so that a
// package no binary imports is reported too. A function is dead when every
// run that loads its package reports it: a function of the root module that
// only the binary of another module calls is live. Generated files are not
// reported, nor a function that a generated file of its package names (a
// GraphQL scalar's unmarshaler that the generated executor calls only for
// arguments no query takes). The environment (GOPROXY, GOFLAGS) is passed on
// to deadcode and go list.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "deadcheck:", err)
		os.Exit(1)
	}
}

// config is what the command line says.
type config struct {
	goCmd   string
	root    string
	modfile string
	filter  string
	exclude *regexp.Regexp
	runs    []runSpec
}

// runSpec is one deadcode run: a module directory and its binaries.
type runSpec struct {
	dir   string
	mains []string
}

func parseArgs(args []string) (*config, error) {
	fs := flag.NewFlagSet("deadcheck", flag.ContinueOnError)
	goCmd := fs.String("go", "go", "the go command")
	root := fs.String("root", ".", "the repository's root directory")
	modfile := fs.String("modfile", "go.mod", "the go.mod that pins deadcode")
	filter := fs.String("filter", `^github\.com/ckegen/ckegen(/|$)`, "the packages (import path regexp) whose functions are checked")
	exclude := fs.String("exclude", `^(mtest|internal/testutil)/`, "the files (path from the root, regexp) never reported: the test harnesses")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	ex, err := regexp.Compile(*exclude)
	if err != nil {
		return nil, fmt.Errorf("-exclude: %w", err)
	}
	c := &config{goCmd: *goCmd, filter: *filter, exclude: ex}
	if c.root, err = filepath.Abs(*root); err != nil {
		return nil, err
	}
	if c.modfile, err = filepath.Abs(*modfile); err != nil {
		return nil, err
	}
	for _, a := range fs.Args() {
		dir, mains, ok := strings.Cut(a, "=")
		if !ok || strings.TrimSpace(mains) == "" {
			return nil, fmt.Errorf("run %q: want DIR=MAIN_PACKAGES, e.g. '.=./cmd/...'", a)
		}
		c.runs = append(c.runs, runSpec{dir: filepath.Join(c.root, dir), mains: strings.Fields(mains)})
	}
	if len(c.runs) == 0 {
		return nil, errors.New("no run: name at least one DIR=MAIN_PACKAGES")
	}
	return c, nil
}

func run(args []string) error {
	c, err := parseArgs(args)
	if err != nil {
		return err
	}
	var results []*result
	for _, r := range c.runs {
		res, err := c.deadcode(r)
		if err != nil {
			return err
		}
		results = append(results, res)
	}
	dead := combine(results)
	var report []string
	for _, f := range dead {
		if c.exclude.MatchString(f.file) {
			continue
		}
		named, err := namedByGenerated(c.root, f)
		if err != nil {
			return err
		}
		if !named {
			report = append(report, fmt.Sprintf("%s:%d: unreachable func: %s", f.file, f.line, f.name))
		}
	}
	if len(report) > 0 {
		slices.Sort(report)
		fmt.Println(strings.Join(report, "\n"))
		return fmt.Errorf("%d functions no binary reaches: delete them, or move what only tests call into a _test.go file of the package", len(report))
	}
	return nil
}

// fn is a function deadcode reported, with its file relative to the root.
type fn struct {
	pkg, name, file string
	line            int
}

func (f fn) key() string { return f.pkg + "." + f.name }

// result is one run's: the packages it loaded and the functions it found
// unreachable among them.
type result struct {
	loaded map[string]bool
	dead   map[string]fn
}

// deadcodeOutput is deadcode -json's.
type deadcodeOutput []struct {
	Path  string
	Funcs []struct {
		Name     string
		Position struct {
			File string
			Line int
		}
	}
}

// deadcode runs deadcode over r's binaries and the other packages of its
// module, and lists the packages that loads.
func (c *config) deadcode(r runSpec) (*result, error) {
	pkgs, err := c.packages(r)
	if err != nil {
		return nil, err
	}
	out, err := c.command(r.dir, c.goCmd, append([]string{"tool", "-modfile=" + c.modfile, "deadcode", "-json", "-filter", c.filter}, pkgs...)...)
	if err != nil {
		return nil, err
	}
	var parsed deadcodeOutput
	if err := json.Unmarshal(out, &parsed); err != nil {
		return nil, fmt.Errorf("deadcode's answer in %s: %w", r.dir, err)
	}
	res := &result{loaded: map[string]bool{}, dead: map[string]fn{}}
	for _, p := range parsed {
		for _, f := range p.Funcs {
			file := f.Position.File
			if !filepath.IsAbs(file) {
				file = filepath.Join(r.dir, file)
			}
			if file, err = filepath.Rel(c.root, file); err != nil {
				return nil, err
			}
			d := fn{pkg: p.Path, name: f.Name, file: filepath.ToSlash(file), line: f.Position.Line}
			res.dead[d.key()] = d
		}
	}
	deps, err := c.command(r.dir, c.goCmd, append([]string{"list", "-deps", "-f", "{{.ImportPath}}"}, pkgs...)...)
	if err != nil {
		return nil, err
	}
	for _, p := range strings.Fields(string(deps)) {
		res.loaded[p] = true
	}
	return res, nil
}

// packages lists r's binaries and the packages of its module that are not
// binaries and not excluded.
func (c *config) packages(r runSpec) ([]string, error) {
	out, err := c.command(r.dir, c.goCmd, "list", "-f", "{{.Name}} {{.ImportPath}} {{.Dir}}", "./...")
	if err != nil {
		return nil, err
	}
	pkgs := slices.Clone(r.mains)
	for line := range strings.Lines(string(out)) {
		f := strings.Fields(line)
		if len(f) != 3 || f[0] == "main" {
			continue
		}
		rel, err := filepath.Rel(c.root, f[2])
		if err != nil {
			return nil, err
		}
		if !c.exclude.MatchString(filepath.ToSlash(rel) + "/") {
			pkgs = append(pkgs, f[1])
		}
	}
	return pkgs, nil
}

func (c *config) command(dir, name string, args ...string) ([]byte, error) {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%s %s (in %s): %w\n%s", name, strings.Join(args, " "), dir, err, stderr.Bytes())
	}
	return out, nil
}

// combine lists the functions every run that loaded their package reports,
// sorted by file and line.
func combine(results []*result) []fn {
	seen := map[string]bool{}
	var dead []fn
	for _, r := range results {
		for k, f := range r.dead {
			if seen[k] || !deadInAll(results, f) {
				continue
			}
			seen[k] = true
			dead = append(dead, f)
		}
	}
	slices.SortFunc(dead, func(a, b fn) int {
		if c := strings.Compare(a.file, b.file); c != 0 {
			return c
		}
		return a.line - b.line
	})
	return dead
}

func deadInAll(results []*result, f fn) bool {
	for _, r := range results {
		if _, dead := r.dead[f.key()]; r.loaded[f.pkg] && !dead {
			return false
		}
	}
	return true
}

// namedByGenerated reports whether a generated file in f's directory names
// f (its function or method name as an identifier).
func namedByGenerated(root string, f fn) (bool, error) {
	name := f.name[strings.LastIndex(f.name, ".")+1:]
	dir := filepath.Join(root, filepath.Dir(f.file))
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return false, err
	}
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ParseComments)
		if err != nil {
			return false, err
		}
		if !ast.IsGenerated(file) {
			continue
		}
		found := false
		ast.Inspect(file, func(n ast.Node) bool {
			if id, ok := n.(*ast.Ident); ok && id.Name == name {
				found = true
			}
			return !found
		})
		if found {
			return true, nil
		}
	}
	return false, nil
}
