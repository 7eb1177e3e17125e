package lockstep

import (
	"testing"
	"time"
)

// When the lateness falls (a worse network gives way to a better one) the
// window of lateness starts afresh, and until it refills our report stands:
// it never goes back to zero, which would make us look unmeasured and every
// lead follow the largest report, and the lead never rises.
func TestLatenessFallKeepsReport(t *testing.T) {
	c, err := NewCore(Config{Members: 2, Self: 0}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if c.tight() || !c.sched.adaptive() {
		t.Fatal("the default config is tight or not adaptive")
	}
	ms := time.Millisecond
	r := c.peers[1]
	now := c.cfg.Start
	var before time.Duration // the lead when the network gets better
	for i := range 2000 {
		now += 10 * ms
		d := 50 * ms
		if i >= 800 {
			d = 5 * ms
		}
		c.addLateness(now, r, d, true, true)
		c.updatePolicy(now)
		if c.lateReport != 0 && r.reportedLag == 0 {
			// The other member's report: higher than ours, so the
			// largest report is above the mean the lead covers.
			r.rttN, r.reportedLag = 8, 150*ms
		}
		switch {
		case i == 799:
			before = c.Stats().Lead
		case i > 799 && c.lateReport == 0:
			t.Fatalf("sample %d: report 0 after the lateness fell", i)
		case i > 799 && c.Stats().Lead > before:
			t.Fatalf("sample %d: lead %v, above %v before the lateness fell", i, c.Stats().Lead, before)
		}
	}
	if r.reportedLag == 0 {
		t.Fatal("no report from 800 samples")
	}
	if c.lateReport != 5*ms {
		t.Errorf("report %v after 1,200 low samples, want 5ms", c.lateReport)
	}
}
