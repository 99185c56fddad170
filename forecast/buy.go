package forecast

import (
	"time"
)

// DefaultLeadTime is how long before it is needed a machine must be
// ordered unless told otherwise; DefaultLifetime a new machine's retire
// date after its arrival.
const (
	DefaultLeadTime = 90 * 24 * time.Hour
	DefaultLifetime = 5 * 365 * 24 * time.Hour
)

// Buy asks the forecast for the purchases that keep the cluster within
// its constraints until its end (docs/forecast.md).
type Buy struct {
	// LeadTime is how long before it is needed a machine is ordered.
	LeadTime time.Duration
	// Racks are where new machines may go; nil: the racks that hold
	// machines of the template's roles.
	Racks []int
	// RackSize is the machines a rack holds (0: no bound): a purchase
	// never overfills a rack.
	RackSize int
}

// Purchase is machines to buy: Count machines of Role and Product, in
// Racks (the rack's number as a string, how many there), needed on
// Needed (the date of the event it keeps, a period's first day), ordered
// by OrderBy (Needed less the lead time; Overdue when it is past), and
// why.
type Purchase struct {
	Role    string         `json:"role"`
	Product string         `json:"product,omitempty"`
	Count   int            `json:"count"`
	Racks   map[string]int `json:"racks"`
	Needed  string         `json:"needed"`
	OrderBy string         `json:"orderBy"`
	Overdue bool           `json:"overdue,omitempty"`
	Reason  string         `json:"reason"`
}

// Arrival is made-up machines the forecast assumed: Count machines of
// Role in Rack, arriving HEALTHY on Date (an event's), retiring on
// Retire, the first and last of their made-up serials, and whether they
// were bought (a Purchase) or given (Options.New).
type Arrival struct {
	Date    string `json:"date"`
	Rack    int    `json:"rack"`
	Role    string `json:"role"`
	Product string `json:"product,omitempty"`
	Count   int    `json:"count"`
	Retire  string `json:"retire"`
	First   string `json:"firstSerial"`
	Last    string `json:"lastSerial"`
	Bought  bool   `json:"bought,omitempty"`
}
