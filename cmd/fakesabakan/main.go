// Command fakesabakan is a sabakan-compatible server for tests and demos:
// searchMachines, machine and setMachineState over GraphQL at /graphql, and
// sabakan's REST endpoints for registering machines and changing their
// state, retire date and labels. It keeps its inventory in memory.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/ckegen/ckegen/machine"
	"github.com/ckegen/ckegen/sabakan/server"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintf(os.Stderr, "fakesabakan: %v\n", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("fakesabakan", flag.ContinueOnError)
	listen := fs.String("listen", "127.0.0.1:10080", "address to listen on")
	machinesFile := fs.String("machines", "", "machines file to start from (a JSON array of machines or a searchMachines response)")
	faults := fs.Bool("faults", false, "enable PUT /-/fault (none, slow DURATION, garbage, error) to break /graphql on purpose, for tests")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))

	store := server.NewStore(nil)
	if *machinesFile != "" {
		data, err := os.ReadFile(*machinesFile)
		if err != nil {
			return err
		}
		ms, err := machine.Parse(data)
		if err != nil {
			return fmt.Errorf("%s: %w", *machinesFile, err)
		}
		if err := store.Load(ms); err != nil {
			return fmt.Errorf("%s: %w", *machinesFile, err)
		}
	}
	srv, err := server.New(store)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	var h http.Handler = srv.Handler()
	if *faults {
		h = withFaults(h)
	}
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = hs.Shutdown(sctx)
	}()
	log.Info("serving", "address", ln.Addr().String(), "graphql", "http://"+ln.Addr().String()+"/graphql")
	if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
