package main

import (
	"slices"
	"testing"
)

// TestMemberEnv: member processes run with the runtime's monitor kept
// out of deep sleep, added to what GODEBUG already says, and not over a
// schedtrace of the user's; and on one processor, unless the user set
// GOMAXPROCS.
func TestMemberEnv(t *testing.T) {
	procs := "GOMAXPROCS=" + memberMaxProcs
	for _, c := range []struct{ env, want []string }{
		{[]string{"A=1"}, []string{"A=1", procs, "GODEBUG=" + memberSchedtrace}},
		{[]string{"GODEBUG=gctrace=1", "B=2"}, []string{"B=2", procs, "GODEBUG=gctrace=1," + memberSchedtrace}},
		{[]string{"GODEBUG=schedtrace=1000,scheddetail=1"}, []string{procs, "GODEBUG=schedtrace=1000,scheddetail=1"}},
		{[]string{"GOMAXPROCS=4", "A=1"}, []string{"GOMAXPROCS=4", "A=1", "GODEBUG=" + memberSchedtrace}},
	} {
		if got := memberEnv(c.env); !slices.Equal(got, c.want) {
			t.Errorf("memberEnv(%q) = %q, want %q", c.env, got, c.want)
		}
	}
}
