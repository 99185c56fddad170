// Command fakesabakan is a sabakan-compatible server for tests and demos:
// searchMachines, machine and setMachineState over GraphQL at /graphql, and
// sabakan's REST endpoints for the IPAM configuration, registering,
// searching and removing machines, and changing their state, retire date
// and labels. It keeps its inventory in memory.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/ckegen/ckegen/internal/version"
	"github.com/ckegen/ckegen/machine"
	"github.com/ckegen/ckegen/sabakan/server"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "fakesabakan: %v\n", err)
		os.Exit(1)
	}
}

func run(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("fakesabakan", flag.ContinueOnError)
	listen := fs.String("listen", "127.0.0.1:10080", "address to listen on")
	machinesFile := fs.String("machines", "", "machines file to start from (a JSON array of machines or a searchMachines response)")
	ipamFile := fs.String("ipam", "", "IPAM configuration to start with (sabakan's JSON, as PUT /api/v1/config/ipam takes it); machines registered later get their index and addresses from it")
	faults := fs.Bool("faults", false, "enable PUT /-/fault (none, slow DURATION, garbage, error) to break /graphql on purpose, for tests")
	showVersion := fs.Bool("version", false, "print the version and exit")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	if *showVersion {
		fmt.Fprintln(stdout, version.String())
		return nil
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))

	store := server.NewStore(nil)
	if *ipamFile != "" {
		f, err := os.Open(*ipamFile)
		if err != nil {
			return err
		}
		c, err := server.ReadIPAMConfig(f)
		f.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", *ipamFile, err)
		}
		if err := store.SetIPAM(c); err != nil {
			return fmt.Errorf("%s: %w", *ipamFile, err)
		}
	}
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
