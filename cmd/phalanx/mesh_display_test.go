package main

import (
	"strings"
	"testing"
)

// TestMeshProgressLine: the table shows no slot or frame before the lobby
// gives them, frames stepped (not the newest frame's number) while
// playing, and the run's whole length once a member is done, whatever its
// last progress line said.
func TestMeshProgressLine(t *testing.T) {
	m := &meshRun{f: &runFlags{frames: 600}}
	tests := []struct {
		p    meshProc
		want []string
	}{
		{meshProc{}, []string{"(slot  -) starting", "frames     -/600"}},
		{meshProc{addrs: []string{"a"}}, []string{"(slot  -) joining", "frames     -/600"}},
		{meshProc{addrs: []string{"a"}, progress: memberMsg{Type: "progress", Slot: 2, Frame: -1}}, []string{"(slot  2) running", "frames     0/600"}},
		{meshProc{addrs: []string{"a"}, progress: memberMsg{Type: "progress", Slot: 2, Frame: 99}}, []string{"frames   100/600"}},
		{meshProc{addrs: []string{"a"}, progress: memberMsg{Type: "progress", Slot: 2, Frame: 587}, result: &memberResult{Slot: 2, Stepped: 599}},
			[]string{"(slot  2) done", "frames   600/600"}},
	}
	for _, tt := range tests {
		line := m.progressLine(&tt.p)
		for _, w := range tt.want {
			if !strings.Contains(line, w) {
				t.Errorf("%q lacks %q", line, w)
			}
		}
	}
}
