package decision

import (
	"testing"

	"github.com/ckegen/ckegen/storage"
)

// TestRecallMessage: a stored memory that does not parse is logged with
// where in it and in JSON's words; encoding/json named the Go struct
// field and its type.
func TestRecallMessage(t *testing.T) {
	var m Memory
	err := m.Recall(storage.Value{Data: []byte(`{"trigger": "planning", "last": {"consecutiveFailures": "2"}}`), ModRevision: 1})
	want := `sabakan/ckegen/memory: line 1, column 57: last.consecutiveFailures: want an integer, got the string "2"`
	if err == nil || err.Error() != want {
		t.Errorf("%v, want %q", err, want)
	}
	if m.Trigger != "" {
		t.Errorf("a memory that does not parse was partly used: %+v", m)
	}
}
