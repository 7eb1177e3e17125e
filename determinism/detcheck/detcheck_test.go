package detcheck_test

import (
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
	"gridutil", "skirmish",
}
