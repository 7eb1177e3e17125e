package netsim

import (
	"strings"
	"testing"
)

// FuzzParseProfile checks that whatever ParseProfile accepts is valid and
// survives a round trip through Profile.String unchanged.
func FuzzParseProfile(f *testing.F) {
	for _, name := range Names() {
		p, _ := Named(name)
		f.Add(p.String())
	}
	f.Add("# c\nname x\n10s latency=50ms jitter=10ms loss=2% burst=1%/30%/0%/50% reorder=1%/20ms dup=0.5% bw=3600 queue=200ms\n2s loss=100%\n")
	f.Add("1s reorder=0%/1ns\n")
	f.Fuzz(func(t *testing.T, in string) {
		p, err := ParseProfile(strings.NewReader(in))
		if err != nil {
			return
		}
		if err := p.Validate(); err != nil {
			t.Fatalf("ParseProfile(%q) returned an invalid profile: %v", in, err)
		}
		text := p.String()
		back, err := ParseProfile(strings.NewReader(text))
		if err != nil {
			t.Fatalf("ParseProfile(String()) = %v for %q", err, text)
		}
		if !equalProfiles(back, p) || back.String() != text {
			t.Fatalf("round trip changed %q into %q", text, back.String())
		}
	})
}
