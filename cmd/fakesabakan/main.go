// Command fakesabakan is a sabakan-compatible server for tests and demos:
// searchMachines, machine and setMachineState over GraphQL at /graphql, and
// sabakan's REST endpoints for the IPAM configuration, registering,
// searching and removing machines, and changing their state, retire date
// and labels. It keeps its inventory in memory.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/ckegen/ckegen/fakesabakan"
	"github.com/ckegen/ckegen/internal/listen"
	"github.com/ckegen/ckegen/internal/usage"
	"github.com/ckegen/ckegen/machine"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "fakesabakan: %v\n", err)
		os.Exit(usage.Code(err))
	}
}

// options are fakesabakan's flags.
type options struct {
	listen, machines, ipam string
	faults                 bool
}

// run parses the command line as the other ckegen binaries do (--flags,
// --help and --version on stdout and exit 0, a "did you mean" for an
// unknown flag, a usage error for a command line refused) and serves
// until SIGTERM or SIGINT.
func run(args []string, stdout io.Writer) error {
	var o options
	cmd := &cobra.Command{
		Use:   "fakesabakan",
		Short: "a sabakan-compatible server for tests and demos, its inventory in memory",
		Long: `fakesabakan serves sabakan's API from an inventory kept in memory:
searchMachines, machine and setMachineState over GraphQL at /graphql, and
sabakan's REST endpoints (/api/v1/config/ipam, /api/v1/machines,
/api/v1/state/SERIAL, /api/v1/retire-date/SERIAL, /api/v1/labels/SERIAL/NAME,
/version, /health).

It starts with the machines of --machines (a JSON array of machines or a
searchMachines response, as examples/machines.json), or with none: machines
can then be registered with POST /api/v1/machines. A machine's state
changes as in sabakan, e.g.
  curl -X PUT -d unreachable http://127.0.0.1:10080/api/v1/state/S000092

` + usage.Help,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) > 0 {
				return fmt.Errorf("unexpected arguments %q: fakesabakan takes only flags, such as --machines FILE (see --help)", args)
			}
			return nil
		},
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return serve(o)
		},
	}
	usage.Cobra(cmd, "fakesabakan")
	cmd.SetArgs(args)
	cmd.SetOut(stdout)
	cmd.SetErr(io.Discard)
	f := cmd.Flags()
	f.SortFlags = false
	f.StringVar(&o.listen, "listen", "127.0.0.1:10080", "address to listen on")
	f.StringVar(&o.machines, "machines", "", "machines file to start from (a JSON array of machines or a searchMachines response); none: an empty inventory")
	f.StringVar(&o.ipam, "ipam", "", "IPAM configuration to start with (sabakan's JSON, as PUT /api/v1/config/ipam takes it); machines registered later get their index and addresses from it")
	f.BoolVar(&o.faults, "faults", false, "enable PUT /-/fault (none, slow DURATION, garbage, error) to break /graphql on purpose, for tests")
	return cmd.Execute()
}

// loadStore makes the store of --ipam and --machines, and says how many
// machines it holds.
func loadStore(o options) (*fakesabakan.Store, int, error) {
	store := fakesabakan.NewStore(nil)
	if o.ipam != "" {
		f, err := os.Open(o.ipam)
		if err != nil {
			return nil, 0, err
		}
		c, err := fakesabakan.ReadIPAMConfig(f)
		_ = f.Close() // read-only, and read
		if err != nil {
			return nil, 0, fmt.Errorf("%s: %w", o.ipam, err)
		}
		if err := store.SetIPAM(c); err != nil {
			return nil, 0, fmt.Errorf("%s: %w", o.ipam, err)
		}
	}
	if o.machines == "" {
		return store, 0, nil
	}
	data, err := os.ReadFile(o.machines)
	if err != nil {
		return nil, 0, err
	}
	ms, err := machine.Parse(data)
	if err != nil {
		return nil, 0, fmt.Errorf("%s: %w", o.machines, err)
	}
	if err := store.Load(ms); err != nil {
		return nil, 0, fmt.Errorf("%s: %w", o.machines, err)
	}
	return store, len(ms), nil
}

// serve loads the inventory and serves it.
func serve(o options) error {
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))

	store, loaded, err := loadStore(o)
	if err != nil {
		return err
	}
	if o.machines == "" {
		log.Warn("empty inventory: no --machines given; register machines with POST /api/v1/machines, or start with --machines FILE (e.g. examples/machines.json)")
	}
	srv, err := fakesabakan.New(store)
	if err != nil {
		return err
	}
	ln, err := listen.TCP("--listen", o.listen, "a second fakesabakan")
	if err != nil {
		return err
	}
	h := srv.Handler()
	if o.faults {
		h = withFaults(h)
	}
	hs := fakesabakan.NewHTTPServer(h)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = hs.Shutdown(sctx)
	}()
	log.Info("serving", "address", ln.Addr().String(), "graphql", "http://"+ln.Addr().String()+"/graphql", "machines", loaded)
	if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
