package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/ckegen/ckegen/internal/testutil/dcgen/dcfiles"
)

// BenchmarkForecastFiles times `ckegenctl sabakan forecast` in process on
// the files of a synthetic data center of 20,000 machines (dcfiles: their
// retire dates spread over the 5 years after dcfiles.Now), from the count
// model's cluster, over 5 years by month: 61 events of about 330 machines
// each.
//
//	go test -run '^$' -bench ForecastFiles -benchtime 3x ./cmd/ckegenctl/
//
// The whole process, on the same files:
//
//	go run ./internal/testutil/dcgen/genfiles -dir /tmp/gen
//	go build -o /tmp/ckegenctl ./cmd/ckegenctl
//	/usr/bin/time -v /tmp/ckegenctl sabakan forecast --template /tmp/gen/template.yml \
//	    --machines /tmp/gen/machines.json --constraints /tmp/gen/constraints.json \
//	    --current /tmp/gen/current.yml --now 2026-01-01T00:00:00Z --until 2031-01-01 >/dev/null
func BenchmarkForecastFiles(b *testing.B) {
	dir := b.TempDir()
	if err := dcfiles.Write(dir, 500, "../../examples/template.yml"); err != nil {
		b.Fatal(err)
	}
	args := []string{"sabakan", "forecast", "--template", dir + "/template.yml", "--machines", dir + "/machines.json",
		"--constraints", dir + "/constraints.json", "--current", dir + "/current.yml",
		"--now", dcfiles.Now.Format(time.RFC3339), "--until", dcfiles.Now.AddDate(5, 0, 0).Format("2006-01-02")}
	b.ReportAllocs()
	var stdout, stderr bytes.Buffer
	for b.Loop() {
		fresh(b)
		stdout.Reset()
		stderr.Reset()
		if code := run(args, strings.NewReader(""), &stdout, &stderr); code != 0 {
			b.Fatalf("exit %d: %s", code, stderr.String())
		}
	}
	if !strings.HasPrefix(stdout.String(), "runway: ") || strings.Count(stdout.String(), "\n20") < 61 {
		b.Fatalf("output:\n%s", stdout.String())
	}
}
