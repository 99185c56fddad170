package constraints

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/ckegen/ckegen/internal/strictjson"
)

// ForSet reads the stored document (nil: none stored) that setting the
// constraint name changes: the stored constraints, or the defaults. A
// document that does not parse is returned as Parse returns it, with its
// error, for a caller that goes on with what could be read; except one
// with the keys of both models, of which nothing can be read: setting a
// key of one model is how the operator chooses between them, so the
// document is read without the other model's keys and note says so, and
// setting any other key is refused.
func ForSet(data []byte, name string) (c Constraints, note string, err error) {
	if data == nil {
		return Default(), "", nil
	}
	c, err = Parse(data)
	if err == nil {
		return c, "", nil
	}
	var doc map[string]json.RawMessage
	if strictjson.Unmarshal(data, &doc) != nil || doc[MinimumWorkersRate] == nil ||
		(doc[MinimumWorkers] == nil && doc[MaximumWorkers] == nil) {
		return c, "", err // not the both-models case
	}
	var replaced []string
	switch name {
	case MinimumWorkersRate:
		replaced = []string{MinimumWorkers, MaximumWorkers}
	case MinimumWorkers, MaximumWorkers:
		replaced = []string{MinimumWorkersRate}
	default:
		return c, "", &ModelError{err}
	}
	var dropped []string
	for _, k := range replaced {
		if _, ok := doc[k]; ok {
			delete(doc, k)
			dropped = append(dropped, k)
		}
	}
	rest, merr := json.Marshal(doc)
	if merr != nil {
		return c, "", merr
	}
	c2, perr := Parse(rest)
	if perr != nil {
		return c, "", err // invalid for another reason as well
	}
	return c2, fmt.Sprintf("the stored constraints hold the keys of both models; %s replaces %s", name, strings.Join(dropped, " and ")), nil
}

// ModelError is the error of setting a constraint on a stored document
// that holds the keys of both models, which is read only once a key of
// one model chooses it.
type ModelError struct{ Err error }

func (e *ModelError) Error() string {
	return fmt.Sprintf("%v; choose the model first: ckegenctl constraints set %s N, or ckegenctl constraints set %s N", e.Err, MinimumWorkersRate, MinimumWorkers)
}

func (e *ModelError) Unwrap() error { return e.Err }
