package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/ckegen/ckegen/assume"
	"github.com/ckegen/ckegen/internal/usage"
	"github.com/ckegen/ckegen/internal/words"
	"github.com/ckegen/ckegen/liveview"
	"github.com/ckegen/ckegen/storage"
)

// What is on order (docs/cli.md#orders): machines bought and not yet in
// sabakan, which the leader's forecast assumes as --assume-new does.

// changeOrdersAttempts bounds the retries when the orders change between
// a command's read and its write.
const changeOrdersAttempts = 3

func newSabakanOrderCmd(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "order",
		Short: "what is on order: machines bought, not yet in sabakan, which the leader's forecast assumes",
	}
	cmd.AddCommand(newOrderAddCmd(e), newOrderListCmd(e), newOrderRemoveCmd(e))
	return cmd
}

func newOrderAddCmd(e *env) *cobra.Command {
	var again bool
	cmd := &cobra.Command{
		Use:   "add SPEC",
		Short: "store an order: rack=N,role=R,count=N,from=YYYY-MM-DD[,product=P][,retire=YYYY-MM-DD]",
		Long: `add stores an order, machines bought and not in sabakan yet, as an
--assume-new spec of ckegenctl sabakan forecast: COUNT machines of ROLE in
RACK, HEALTHY from FROM, with sabakan's product label PRODUCT, retiring at
RETIRE (by default FROM plus the forecast's machine lifetime). The leader's
forecast assumes every order once it forecasts again; ckegenctl sabakan
status says of an order the stored forecast did not assume that it does not
yet.

The order gets the next ID: IDs are never given twice, also after a
removal. An order equal to one on order (the same spec, once written in its
normal form) is refused unless --again: two orders alike are twice the
machines. Remove an order with ckegenctl sabakan order remove ID once its
machines are in sabakan, or they count twice.`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			n, err := assume.ParseNew(args[0])
			if err != nil {
				return fmt.Errorf("order add: %w; nothing was stored", err)
			}
			var added storage.Order
			err = e.withStorage(func(ctx context.Context, st storage.Storage) error {
				return changeOrders(ctx, st, func(o *storage.Orders) error {
					var err error
					added, err = addOrder(o, n, again, time.Now())
					return err
				})
			})
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "order %d added: %s\n", added.ID, added.Spec)
			fmt.Fprintf(out, "The leader's forecast assumes it once it forecasts again (ckegenctl sabakan status says whether the stored forecast does); remove it (ckegenctl sabakan order remove %d) once its machines are in sabakan, or they count twice.\n", added.ID)
			if d := n.From.Format(time.DateOnly); d < time.Now().UTC().Format(time.DateOnly) {
				fmt.Fprintf(cmd.ErrOrStderr(), "warning: from %s has passed: the forecast assumes these machines HEALTHY now\n", d)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&again, "again", false, "add the order although one with the same spec is on order (machines ordered twice)")
	return cmd
}

// addOrder adds n to o as ordered at now, with the next ID, and returns
// the order; an order with the same spec is refused unless again.
func addOrder(o *storage.Orders, n assume.New, again bool, now time.Time) (storage.Order, error) {
	spec := n.String()
	id := max(o.NextID, 1)
	for _, p := range o.Orders {
		if !again && normalSpec(p.Spec) == spec {
			return storage.Order{}, fmt.Errorf("order add: %s is on order already (order %d, added %s): nothing was stored; add it with --again if these machines were ordered twice",
				spec, p.ID, ts(p.Added))
		}
		id = max(id, p.ID+1)
	}
	ord := storage.Order{ID: id, Spec: spec, Added: now.UTC().Truncate(time.Second)}
	o.Orders = append(o.Orders, ord)
	o.NextID = id + 1
	return ord, nil
}

// normalSpec is spec in the form New.String writes, or spec itself when
// it does not parse.
func normalSpec(spec string) string {
	if n, err := assume.ParseNew(spec); err == nil {
		return n.String()
	}
	return spec
}

func newOrderListCmd(e *env) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "list",
		Short: "list what is on order, oldest first",
		Args:  exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkFormat(output, "text", "json"); err != nil {
				return err
			}
			return e.withStorage(func(ctx context.Context, st storage.Storage) error {
				o, _, err := st.GetOrders(ctx)
				if err != nil {
					return err
				}
				if output == "json" {
					return printData(cmd.OutOrStdout(), o, output)
				}
				return ordersTable(cmd.OutOrStdout(), o)
			})
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "text", "output format: text or json")
	return cmd
}

// ordersTable lists the orders: ID, SPEC, ADDED.
func ordersTable(w io.Writer, o storage.Orders) error {
	if len(o.Orders) == 0 {
		_, err := fmt.Fprintln(w, "nothing on order")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSPEC\tADDED")
	for _, ord := range o.Orders {
		fmt.Fprintf(tw, "%d\t%s\t%s\n", ord.ID, ord.Spec, ts(ord.Added))
	}
	return tw.Flush()
}

func newOrderRemoveCmd(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "remove ID",
		Short: "remove an order, once its machines are in sabakan",
		Long: `remove removes the order ID (ckegenctl sabakan order list shows them): the
leader's forecast no longer assumes its machines. Remove an order once its
machines are in sabakan: until then the forecast counts them twice. An ID
not on order is an error that lists those on order; nothing is written.`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := strconv.Atoi(args[0])
			if err != nil || id < 1 {
				return usage.Errorf("order remove: ID: want the number of an order (ckegenctl sabakan order list), got %q", args[0])
			}
			var removed storage.Order
			err = e.withStorage(func(ctx context.Context, st storage.Storage) error {
				return changeOrders(ctx, st, func(o *storage.Orders) error {
					i := slices.IndexFunc(o.Orders, func(ord storage.Order) bool { return ord.ID == id })
					if i < 0 {
						return fmt.Errorf("order remove: no order %d: %s; nothing was written", id, onOrder(*o))
					}
					removed = o.Orders[i]
					o.Orders = slices.Delete(o.Orders, i, i+1)
					return nil
				})
			})
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "order %d removed: %s\n", removed.ID, removed.Spec)
			return nil
		},
	}
	return cmd
}

// onOrder names the IDs on order.
func onOrder(o storage.Orders) string {
	if len(o.Orders) == 0 {
		return "nothing is on order"
	}
	ids := make([]string, len(o.Orders))
	for i, ord := range o.Orders {
		ids[i] = strconv.Itoa(ord.ID)
	}
	return "on order: " + strings.Join(ids, ", ")
}

// changeOrders reads the orders, lets change them change, and stores them
// guarded on the read; when they changed meanwhile it reads them again,
// changeOrdersAttempts times in all. An error of change stores nothing.
func changeOrders(ctx context.Context, st storage.Storage, change func(*storage.Orders) error) error {
	for range changeOrdersAttempts {
		o, was, err := st.GetOrders(ctx)
		if err != nil {
			return err
		}
		if err := change(&o); err != nil {
			return err
		}
		if err := st.PutOrders(ctx, was, o); !errors.Is(err, storage.ErrConflict) {
			return err
		}
	}
	return fmt.Errorf("%s changed %d times in a row while this command changed it: nothing was written; check with ckegenctl sabakan order list and try again",
		storage.KeyCKEGenOrders, changeOrdersAttempts)
}

// capacityLine is the stored forecast's next order-by date, and whether
// it has passed at the view's time ("" when nothing needs buying).
func capacityLine(r liveview.Runway) string {
	s := r.Summary
	if s == nil || s.OrderBy == "" {
		return ""
	}
	overdue := ""
	if s.OrderBy < r.Now.UTC().Format(time.DateOnly) {
		overdue = ", overdue"
	}
	return fmt.Sprintf("next order by %s%s (%s keep the constraints; RUNWAY is if nothing is bought: ckegenctl sabakan forecast --buy)", s.OrderBy, overdue,
		words.Count(len(s.Purchases)+s.PurchasesLeft, "purchase", "purchases"))
}

// orderRows list what is on order under ORDERS, one a row, saying of an
// order whose from date has passed that the forecast assumes it until it
// is removed (whether its machines are in sabakan cannot be known: they
// have no serials yet), and of one the stored forecast r did not assume
// that it does not yet. Orders that cannot be read are said in the row.
func orderRows(ctx context.Context, tw io.Writer, st storage.Storage, r liveview.Runway) {
	o, _, err := st.GetOrders(ctx)
	if err != nil {
		fmt.Fprintf(tw, "ORDERS\tcannot be read: %v\n", err)
		return
	}
	assumed := map[string]bool{}
	if r.Summary != nil {
		for _, s := range r.Summary.Orders {
			assumed[normalSpec(s)] = true
		}
	}
	today := r.Now.UTC().Format(time.DateOnly)
	for i, ord := range o.Orders {
		label := ""
		if i == 0 {
			label = "ORDERS"
		}
		fmt.Fprintf(tw, "%s\t%s\n", label, orderLine(ord, today, r, assumed))
	}
}

// orderLine is one order in the status (orderRows).
func orderLine(ord storage.Order, today string, r liveview.Runway, assumed map[string]bool) string {
	n, err := assume.ParseNew(ord.Spec)
	if err != nil {
		return fmt.Sprintf("order %d cannot be read: %v; remove it (ckegenctl sabakan order remove %d) and add it again", ord.ID, err, ord.ID)
	}
	var line string
	if from := n.From.Format(time.DateOnly); from < today {
		line = fmt.Sprintf("order %d (%s): from %s has passed; ckegen's forecast still assumes it until it is removed (ckegenctl sabakan order remove %d) once its machines are in sabakan",
			ord.ID, ord.Spec, from, ord.ID)
	} else {
		line = fmt.Sprintf("order %d: %s", ord.ID, ord.Spec)
	}
	if s := r.Summary; s != nil && !s.At.IsZero() && !assumed[n.String()] {
		line += fmt.Sprintf("; the stored forecast (made %s) does not assume it yet", s.At.UTC().Format(time.RFC3339))
	}
	return line
}
