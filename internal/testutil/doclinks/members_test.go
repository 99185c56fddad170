package doclinks

import (
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"
)

// repo is a small repository for the checker's own test: types with
// fields, methods, embedded types of the repository and from outside it,
// an interface, an alias and a defined type, a name two packages give a
// type, and a testdata directory that is not Go.
var repo = fstest.MapFS{
	"tick/step.go": {Data: []byte(`package tick

import (
	"time"

	"github.com/ckegen/ckegen/storage"
	etcd "go.etcd.io/etcd/client/v3"
)

type Step struct {
	Memory
	*storage.Storage
	interval time.Duration
}

func (s *Step) Run() {}

func (s Step) after() {}

type Gatherer interface {
	Gather() error
	storage.Putter
}

type Client struct{ *etcd.Client }

type Alias = Step

type Defined Memory

func Generic[T any]() {}
`)},
	"tick/memory.go": {Data: []byte(`package tick

import "time"

func (m Memory) Due() bool { return false }

type Memory struct{ next time.Time }

type memory struct{ last int }
`)},
	"tick/testdata/broken.go": {Data: []byte("not Go")},
	"storage/storage.go": {Data: []byte(`package storage

type Storage struct{}

func (s *Storage) PutStatus() error { return nil }

type Putter interface{ Put() }

type Status struct{ Pending bool }

const KeyStatus = "storage/status"
`)},
	"decision/decision.go": {Data: []byte(`package decision

type Memory struct{ Plan string }
`)},
	"cmd/ckegen/main_test.go": {Data: []byte(`package main

import "testing"

func TestDaemonProcess(t *testing.T) {}
`)},
	"deploy/src.tar.gz": {Data: []byte{}},
	"cluster.yml":       {Data: []byte{}},
}

// TestMembers: the checker passes what names the repository's Go as it
// is, and what is not Go at all, and fails each name of a member a type
// lacks, at its line.
func TestMembers(t *testing.T) {
	newChecker := repoOf(t, repo, map[string]bool{"storage/status": true})
	pass := []string{
		"`Step.Run` and `Step.after`, `(*Step).Run`, `Step.Run(ctx,`",
		"`Memory.next` and `Memory.Due()`",
		"`Memory.Plan`: decision's Memory has it, tick's does not",
		"`Step.Memory`, `Step.Storage`: embedded fields by their type's name",
		"`Step.next`, `Step.Due`, `Step.PutStatus`: promoted, the last from another package",
		"`Gatherer.Gather`, `Gatherer.Put`: an interface's methods, one embedded",
		"`Client.Watch`: embeds a type from outside the repository",
		"`Alias.Run`, `Defined.next`",
		"`tick.Step.Run(ctx)`, `tick.memory.last`, `storage.Status.Pending`, `tick.Memory`",
		"`cmd/ckegen.TestDaemonProcess`, `tick/step.go:3`, `deploy/src.tar.gz`",
		"`storage/status`, `storage.spare_key`, `cluster.yml`, `spec.nodes`, `status.state: unknown`",
		"`server.Integrator`, `Server.Run`, `ckegenctl sabakan plan`, `v0.MINOR.PATCH`, `CLUSTER.yml`",
		"```sh\ncd tick && go test -run TestX ./\n```",
		"```go\nvar s tick.Step\ns.Run()\n```",
	}
	for _, doc := range pass {
		if got := newChecker().check(doc); len(got) > 0 {
			t.Errorf("check(%q) = %q, want nothing", doc, got)
		}
	}
	fail := []struct{ doc, want string }{
		{"`Memory.nope`", "1: `Memory.nope` names Memory.nope, but no type Memory of the repository (in decision, tick) has a field or method nope"},
		{"text\n\n`Step.Gather`", "3: "},
		{"`(*Step).Walk`", "1: "},
		{"`Gatherer.Nope`", "1: "},
		{"`Step.interval2`", "1: "},
		{"`Step.last`: memory is not embedded", "1: "},
		{"`Defined.Due`: a defined type has no methods of the type it is made from", "1: "},
		{"`tick.Step.nope`", "1: `tick.Step.nope` names Step.nope in tick, but its type Step has no field or method nope"},
		{"`tick.memory.nope`", "1: "},
		{"`storage.Status.Held`", "1: "},
		{"`tick.Nope`", "1: `tick.Nope` names Nope in tick, which declares no such name"},
		{"`tick.Generic.T`", "1: `tick.Generic.T` names Generic.T in tick, but Generic is not a type there"},
		{"`tick.Nope.X`", "1: "},
		{"`tick/nope.go`", "1: `tick/nope.go` names tick/nope.go, which is not in the repository"},
		{"`Step.Run`\n\n```go\n// the fence begins at line 3\nvar s tick.Step.nope\n```", "5: "},
	}
	for _, c := range fail {
		got := newChecker().check(c.doc)
		if len(got) != 1 || !strings.HasPrefix(got[0], c.want) {
			t.Errorf("check(%q) = %q, want one problem that begins %q", c.doc, got, c.want)
		}
	}
}

// repoOf returns a function that makes a new checker of the repository
// fsys, whose etcd keys are keys.
func repoOf(t *testing.T, fsys fs.ReadDirFS, keys map[string]bool) func() *checker {
	t.Helper()
	d, err := readDecls(fsys)
	if err != nil {
		t.Fatal(err)
	}
	entries, err := fsys.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	top := map[string]bool{}
	for _, e := range entries {
		top[e.Name()] = true
	}
	return func() *checker { return &checker{fsys: fsys, top: top, keys: keys, decls: d} }
}
