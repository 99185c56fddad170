// Command deadcheck runs golang.org/x/tools/cmd/deadcode (pinned in this
// module) over every binary of the repository and fails when a function
// none of them reaches is found outside the test harnesses:
//
//	deadcheck -root .. -modfile go.mod -exclude '^(mtest|internal/testutil)/' . ckeserver
//
// Each argument is a run: a module directory (relative to -root). Its
// binaries are its main packages, and it loads them and every other
// package of the module, so that a package no binary imports is reported
// too; -exclude's packages (the test harnesses, mains included) are left
// out but for what a binary imports. A function is dead when every run
// that loads its package reports it: a function of the root module that
// only the binary of another module calls is live. Generated files are not reported, nor a
// function that a generated file of its package names (a GraphQL scalar's
// unmarshaler that the generated executor calls only for arguments no
// query takes). The environment (GOPROXY, GOFLAGS) is passed on to
// deadcode and go list.
package main

import (
	"cmp"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

var (
	goCmd   = flag.String("go", "go", "the go command")
	root    = flag.String("root", ".", "the repository's root directory")
	modfile = flag.String("modfile", "go.mod", "the go.mod that pins deadcode")
	filter  = flag.String("filter", `^github\.com/ckegen/ckegen(/|$)`, "the packages (import path regexp) whose functions are checked")
	exclude = flag.String("exclude", `^(mtest|internal/testutil)/`, "the files (path from the root, regexp) neither loaded nor reported: the test harnesses")
)

func main() {
	flag.Parse()
	if err := run(flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "deadcheck:", err)
		os.Exit(1)
	}
}

func run(dirs []string) error {
	ex, err := regexp.Compile(*exclude)
	if err != nil {
		return fmt.Errorf("-exclude: %w", err)
	}
	if len(dirs) == 0 {
		return errors.New("no run: name at least one module directory, e.g. '.'")
	}
	for _, path := range []*string{root, modfile} {
		if *path, err = filepath.Abs(*path); err != nil {
			return err
		}
	}
	var results []*result
	for _, dir := range dirs {
		res, err := deadcode(filepath.Join(*root, dir), ex)
		if err != nil {
			return err
		}
		results = append(results, res)
	}
	var report []string
	for _, f := range combine(results) {
		named, err := namedByGenerated(*root, f)
		if err != nil {
			return err
		}
		if !named && !ex.MatchString(f.file) {
			report = append(report, fmt.Sprintf("%s:%d: unreachable func: %s", f.file, f.line, f.name))
		}
	}
	if len(report) > 0 {
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

// deadcode runs deadcode over the packages of the module in dir that
// exclude does not match, and lists them and their dependencies as loaded.
func deadcode(dir string, exclude *regexp.Regexp) (*result, error) {
	var pkgs []string
	res := &result{loaded: map[string]bool{}, dead: map[string]fn{}}
	list, err := output(dir, "list", "-f", `{{.Dir}}{{"\t"}}{{.ImportPath}} {{join .Deps " "}}`, "./...")
	if err != nil {
		return nil, err
	}
	for line := range strings.Lines(string(list)) {
		pkgDir, deps, _ := strings.Cut(line, "\t")
		rel, err := filepath.Rel(*root, pkgDir)
		if err != nil {
			return nil, err
		}
		if !exclude.MatchString(filepath.ToSlash(rel) + "/") {
			pkgs = append(pkgs, strings.Fields(deps)[0])
			for _, p := range strings.Fields(deps) {
				res.loaded[p] = true
			}
		}
	}
	out, err := output(dir, append([]string{"tool", "-modfile=" + *modfile, "deadcode", "-json", "-filter", *filter}, pkgs...)...)
	if err != nil {
		return nil, err
	}
	var parsed []struct {
		Path  string
		Funcs []struct {
			Name     string
			Position struct {
				File string
				Line int
			}
		}
	}
	if err := json.Unmarshal(out, &parsed); err != nil {
		return nil, fmt.Errorf("deadcode's answer in %s: %w", dir, err)
	}
	for _, p := range parsed {
		for _, f := range p.Funcs {
			file := f.Position.File // relative to dir when it is below it
			if !filepath.IsAbs(file) {
				file = filepath.Join(dir, file)
			}
			file, err := filepath.Rel(*root, file)
			if err != nil {
				return nil, err
			}
			d := fn{pkg: p.Path, name: f.Name, file: filepath.ToSlash(file), line: f.Position.Line}
			res.dead[d.key()] = d
		}
	}
	return res, nil
}

// output runs the go command in dir; its standard error is deadcheck's.
func output(dir string, args ...string) ([]byte, error) {
	cmd := exec.Command(*goCmd, args...)
	cmd.Dir, cmd.Stderr = dir, os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%s %s (in %s): %w", *goCmd, strings.Join(args, " "), dir, err)
	}
	return out, nil
}

// combine lists the functions every run that loaded their package reports,
// sorted by file and line.
func combine(results []*result) []fn {
	dead := map[string]fn{}
	for _, r := range results {
		for k, f := range r.dead {
			if !slices.ContainsFunc(results, func(o *result) bool { return o.loaded[f.pkg] && o.dead[k] == (fn{}) }) {
				dead[k] = f
			}
		}
	}
	return slices.SortedFunc(maps.Values(dead), func(a, b fn) int {
		return cmp.Or(strings.Compare(a.file, b.file), a.line-b.line)
	})
}

// namedByGenerated reports whether a generated file in f's directory names
// f (its function or method name as an identifier).
func namedByGenerated(root string, f fn) (bool, error) {
	name := f.name[strings.LastIndex(f.name, ".")+1:]
	files, err := filepath.Glob(filepath.Join(root, filepath.Dir(f.file), "*.go"))
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
		for n := range ast.Preorder(file) {
			if id, ok := n.(*ast.Ident); ok && id.Name == name {
				return true, nil
			}
		}
	}
	return false, nil
}
