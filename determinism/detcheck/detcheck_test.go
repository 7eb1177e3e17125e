package detcheck_test

import (
	"errors"
	"maps"
	"slices"
	"testing"

	"golang.org/x/tools/go/analysis/analysistest"

	"github.com/phalanx-net/phalanx/determinism/detcheck"
)

// TestRules checks the // want comments of the corpus in testdata/src: the
// marked packages, one or two per rule, hold cases that must be reported
// and cases that must not; the helper packages they call (mapkeys, vec,
// uuidgen, gameclock) are not marked and their facts are checked.
func TestRules(t *testing.T) {
	analysistest.Run(t, analysistest.TestData(), detcheck.Analyzer, rulePackages...)
}

// rulePackages are the corpus packages checked by // want comments.
var rulePackages = []string{
	"mapkeys", "vec", "uuidgen", "gameclock",
	"maprange", "draw", "float", "sources", "sortuse", "concurrency",
	"allow", "allowpkg", "misspelled", "unmarked", "markedlater",
	"gridutil", "skirmish", "debugfmt",
}

// TestConfig checks that disabled rules are neither reported nor followed
// through calls, that Enable keeps only its rules, and that unknown rule
// names are refused.
func TestConfig(t *testing.T) {
	if _, err := detcheck.New(detcheck.Config{Disable: []string{"floats"}}); !errors.Is(err, detcheck.ErrUnknownRule) {
		t.Errorf("Disable floats: error %v, want ErrUnknownRule", err)
	}
	if _, err := detcheck.New(detcheck.Config{Enable: []string{"maprange", "nope"}}); !errors.Is(err, detcheck.ErrUnknownRule) {
		t.Errorf("Enable nope: error %v, want ErrUnknownRule", err)
	}
	tests := []struct {
		cfg  detcheck.Config
		want map[string]bool // the categories reported on maprange and sources
	}{
		{detcheck.Config{}, map[string]bool{"maprange": true, "float": true, "rand": true, "clock": true, "env": true, "maphash": true, "pointer": true, "unsafe": true}},
		{detcheck.Config{Disable: []string{"maprange", "rand"}}, map[string]bool{"float": true, "clock": true, "env": true, "maphash": true, "pointer": true, "unsafe": true}},
		{detcheck.Config{Enable: []string{"rand", "clock"}, Disable: []string{"clock"}}, map[string]bool{"rand": true}},
	}
	loaded := load(t, "maprange", "sources")
	for _, tt := range tests {
		a, err := detcheck.New(tt.cfg)
		if err != nil {
			t.Fatal(err)
		}
		got := make(map[string]bool)
		for _, act := range analyze(t, a, loaded).Roots {
			for _, d := range act.Diagnostics {
				got[d.Category] = true
			}
		}
		if !maps.Equal(got, tt.want) {
			t.Errorf("%+v: categories %v, want %v", tt.cfg, slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(tt.want)))
		}
	}
}
