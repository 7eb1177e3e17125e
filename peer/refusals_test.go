package peer

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// TestRefusalLogRateLimited: a flood of refusals logs one line per
// interval, carrying the count of the refusals it held back, and Close's
// flush logs the rest.
func TestRefusalLogRateLimited(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	now := time.Unix(1_700_000_000, 0)
	r := newRefusalLog(log, RefusalLogInterval, func() time.Time { return now })
	lines := func() []string { return strings.Split(strings.TrimSpace(buf.String()), "\n") }

	for i := range 1000 { // 1000 refusals in 5 s
		r.refused("peer: refused a stranger", "n", i)
		now = now.Add(5 * time.Millisecond)
	}
	if got := lines(); len(got) != 1 || !strings.Contains(got[0], "n=0") {
		t.Fatalf("after a flood within one interval: %q", got)
	}
	now = now.Add(RefusalLogInterval)
	r.refused("peer: refused a stranger", "n", 1000)
	if got := lines(); len(got) != 2 || !strings.Contains(got[1], "n=1000") || !strings.Contains(got[1], "refused_before=999") {
		t.Fatalf("after the interval: %q", got)
	}
	r.refused("peer: refused a stranger", "n", 1001)
	r.refused("peer: refused a stranger", "n", 1002)
	r.flush()
	if got := lines(); len(got) != 3 || !strings.Contains(got[2], "count=2") || !strings.Contains(got[2], "refused a stranger") {
		t.Fatalf("after flush: %q", got)
	}
	r.flush()
	if got := lines(); len(got) != 3 {
		t.Fatalf("a second flush logged: %q", got)
	}
}
