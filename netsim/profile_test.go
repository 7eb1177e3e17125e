package netsim

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseProfile(t *testing.T) {
	in := `
# comment line
name flaky   # trailing comment
10s latency=50ms jitter=10ms loss=2% burst=1%/30%/0%/50% reorder=1%/20ms dup=0.5% bw=3600 queue=200ms
	2s   dup=0.0001%   latency=1ms
500ms
`
	got, err := ParseProfile(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	want := Profile{Name: "flaky", Phases: []Phase{
		{Duration: 10 * time.Second, Conditions: Conditions{
			Latency: 50 * time.Millisecond, Jitter: 10 * time.Millisecond, Loss: 20_000,
			Burst:   Burst{Enter: 10_000, Leave: 300_000, LossGood: 0, LossBad: 500_000},
			Reorder: 10_000, ReorderDelay: 20 * time.Millisecond, Duplicate: 5_000,
			Bandwidth: 3600, Queue: 200 * time.Millisecond,
		}},
		{Duration: 2 * time.Second, Conditions: Conditions{Latency: time.Millisecond, Duplicate: 1}},
		{Duration: 500 * time.Millisecond},
	}}
	if !equalProfiles(got, want) {
		t.Fatalf("ParseProfile =\n%+v\nwant\n%+v", got, want)
	}
}

func equalProfiles(a, b Profile) bool {
	return a.Name == b.Name && slices.Equal(a.Phases, b.Phases)
}

func TestParseProfileErrors(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		line    int    // 0: not a *ParseError
		problem string // substring of the error
	}{
		{"empty", "", 0, "no phases"},
		{"only comments", "# nothing\n\n   \n", 0, "no phases"},
		{"only a name", "name x\n", 0, "no phases"},
		{"second name", "name a\nname b\n1s\n", 2, "second name line (first on line 1)"},
		{"name without value", "name\n", 1, `want "name NAME", got 1 words`},
		{"name with two values", "name a b\n", 1, "got 3 words"},
		{"bad name", "name a/b\n", 1, `name "a/b"`},
		{"no duration", "latency=5ms\n", 1, `start with a duration such as 10s, got "latency=5ms"`},
		{"zero duration", "1s\n0s\n", 2, "phase duration 0s is not positive"},
		{"negative duration", "-1s\n", 1, "phase duration -1s is not positive"},
		{"not key=value", "1s latency\n", 1, `"latency" is not key=value`},
		{"empty value", "1s loss=\n", 1, "loss has no value"},
		{"set twice", "1s loss=1% loss=2%\n", 1, "loss set twice"},
		{"unknown key", "1s\n\n1s lag=5ms\n", 3, `unknown setting "lag" (known: latency, jitter, loss, burst, reorder, dup, bw, queue)`},
		{"bad latency", "1s latency=5\n", 1, `latency: "5" is not a duration`},
		{"bad jitter", "1s jitter=x\n", 1, `jitter: "x" is not a duration`},
		{"bad queue", "1s bw=10 queue=1\n", 1, `queue: "1" is not a duration`},
		{"negative latency", "1s latency=-5ms\n", 1, "latency -5ms is negative"},
		{"huge latency", "1s latency=2h\n", 1, "latency 2h0m0s is above 1h0m0s"},
		{"loss without %", "1s loss=2\n", 1, `loss: "2" is not a percentage (missing %)`},
		{"loss too precise", "1s loss=0.00001%\n", 1, "loss: \"0.00001%\" has more than 4 decimal places"},
		{"loss above 100", "1s loss=101%\n", 1, `loss: "101%" is above 100%`},
		{"dup bad", "1s dup=x%\n", 1, `dup: "x%" is not a percentage`},
		{"burst three parts", "1s burst=1%/2%/3%\n", 1, "want four percentages"},
		{"burst bad part", "1s burst=1%/2%/x/4%\n", 1, `burst: "x" is not a percentage`},
		{"reorder no slash", "1s reorder=1%\n", 1, "want PERCENT/DURATION"},
		{"reorder bad prob", "1s reorder=1/5ms\n", 1, `reorder: "1" is not a percentage`},
		{"reorder bad delay", "1s reorder=1%/5\n", 1, `reorder: "5" is not a duration`},
		{"reorder zero delay", "1s reorder=1%/0s\n", 1, "needs a positive delay"},
		{"bw not a number", "1s bw=3.6k\n", 1, "bw=3.6k: want whole bytes per second"},
		{"bw negative", "1s bw=-1\n", 1, "bw=-1: want whole bytes per second"},
		{"bw too large", "1s bw=99999999999999999999\n", 1, "too large"},
		{"queue without bw", "1s queue=10ms\n", 1, "queue 10ms set without a bandwidth"},
		{"total overflows", "2562047h\n2562047h\n", 2, "total duration of the phases overflows"},
		{"line too long", "1s " + strings.Repeat("x", 70_000) + "\n", 0, "reading profile"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseProfile(strings.NewReader(tt.in))
			if err == nil {
				t.Fatalf("ParseProfile succeeded, want error containing %q", tt.problem)
			}
			if !strings.Contains(err.Error(), tt.problem) {
				t.Fatalf("error %q does not contain %q", err, tt.problem)
			}
			var pe *ParseError
			if tt.line == 0 {
				if errors.As(err, &pe) {
					t.Fatalf("error %v is a ParseError, want none", err)
				}
				return
			}
			if !errors.As(err, &pe) || pe.Line != tt.line {
				t.Fatalf("error %v: want *ParseError on line %d", err, tt.line)
			}
			if !errors.Is(err, ErrInvalidProfile) {
				t.Fatalf("error %v does not wrap ErrInvalidProfile", err)
			}
			if want := "netsim: profile line "; !strings.HasPrefix(err.Error(), want) {
				t.Fatalf("error %q lacks prefix %q", err, want)
			}
		})
	}
}

func TestProfileRoundTrip(t *testing.T) {
	profiles := []Profile{
		{Phases: []Phase{{Duration: time.Nanosecond}}},
		{Name: "every-field", Phases: []Phase{
			{Duration: 90 * time.Second, Conditions: Conditions{
				Latency: 1234567 * time.Nanosecond, Jitter: 7 * time.Microsecond, Loss: 1,
				Burst:   Burst{Enter: 2, Leave: 0, LossGood: 999_999, LossBad: Always},
				Reorder: 0, ReorderDelay: time.Millisecond, Duplicate: 123_456,
				Bandwidth: 1 << 40, Queue: MaxDelay,
			}},
			{Duration: time.Hour + time.Nanosecond, Conditions: Conditions{Burst: Burst{LossBad: 1}}},
		}},
	}
	for _, name := range Names() {
		p, err := Named(name)
		if err != nil {
			t.Fatal(err)
		}
		profiles = append(profiles, p)
	}
	for _, p := range profiles {
		text := p.String()
		back, err := ParseProfile(strings.NewReader(text))
		if err != nil {
			t.Fatalf("ParseProfile(%q): %v", text, err)
		}
		if !equalProfiles(back, p) {
			t.Fatalf("round trip of %q gave\n%+v\nwant\n%+v", text, back, p)
		}
		if again := back.String(); again != text {
			t.Fatalf("String not stable: %q then %q", text, again)
		}
	}
}

func TestProfileString(t *testing.T) {
	p, _ := Named("bad")
	want := "name bad\n1m0s latency=60ms jitter=40ms loss=2% burst=4%/25%/0%/80% reorder=2%/30ms dup=1% bw=250000 queue=200ms\n"
	if got := p.String(); got != want {
		t.Fatalf("String() = %q, want %q", got, want)
	}
}

func TestLoadProfile(t *testing.T) {
	p, err := LoadProfile(filepath.Join("testdata", "flaky.profile"))
	if err != nil {
		t.Fatal(err)
	}
	if p.Name != "flaky" || len(p.Phases) != 2 || p.Period() != 12*time.Second {
		t.Fatalf("LoadProfile = %+v, want name flaky, 2 phases, period 12s", p)
	}
	if p.Phases[1].Loss != Always {
		t.Fatalf("phase 2 loss = %v, want 100%%", p.Phases[1].Loss)
	}

	p, err = LoadProfile(filepath.Join("testdata", "named.profile"))
	if err != nil || p.Name != "flaky-wifi" {
		t.Fatalf("LoadProfile(named.profile) = %+v, %v; want name flaky-wifi", p, err)
	}

	_, err = LoadProfile(filepath.Join("testdata", "broken.profile"))
	var pe *ParseError
	if !errors.As(err, &pe) || pe.Line != 2 || !strings.Contains(err.Error(), "broken.profile") {
		t.Fatalf("LoadProfile(broken.profile) error = %v, want ParseError on line 2 naming the file", err)
	}

	_, err = LoadProfile(filepath.Join("testdata", "bad name.profile"))
	if !errors.Is(err, ErrInvalidProfile) || !strings.Contains(err.Error(), "add a name line") {
		t.Fatalf("LoadProfile(bad name.profile) error = %v, want invalid file name", err)
	}

	_, err = LoadProfile(filepath.Join("testdata", "missing.profile"))
	if !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("LoadProfile(missing) error = %v, want os.ErrNotExist", err)
	}
}

func TestNamed(t *testing.T) {
	want := []string{"lan", "broadband", "intercontinental", "bad", "modem"}
	if got := Names(); !slices.Equal(got, want) {
		t.Fatalf("Names() = %v, want %v", got, want)
	}
	for _, name := range want {
		p, err := Named(name)
		if err != nil {
			t.Fatalf("Named(%q): %v", name, err)
		}
		if p.Name != name || p.Validate() != nil {
			t.Fatalf("Named(%q) = %+v (valid: %v)", name, p, p.Validate())
		}
	}

	// Changing a returned profile does not change the next one.
	p, _ := Named("lan")
	p.Phases[0].Loss = Always
	if q, _ := Named("lan"); q.Phases[0].Loss != 0 {
		t.Fatal("Named returned a shared profile")
	}

	bad, _ := Named("bad")
	c := bad.Phases[0].Conditions
	if total := 1_000_000 - (1_000_000-int(c.Loss))*(1_000_000-int(c.Burst.Rate()))/1_000_000; total < 100_000 {
		t.Errorf("bad: long-run loss %d ppm, want at least 10%%", total)
	}
	modem, _ := Named("modem")
	if bw := modem.Phases[0].Bandwidth; bw != 3600 {
		t.Errorf("modem: bandwidth %d, want 3600", bw)
	}

	_, err := Named("dialup")
	if !errors.Is(err, ErrUnknownProfile) {
		t.Fatalf("Named(dialup) error = %v, want ErrUnknownProfile", err)
	}
	for _, name := range want {
		if !strings.Contains(err.Error(), name) {
			t.Errorf("error %q does not list %q", err, name)
		}
	}
}

func TestProfileValidate(t *testing.T) {
	tests := []struct {
		name    string
		p       Profile
		problem string
	}{
		{"no phases", Profile{}, "no phases"},
		{"zero phase", Profile{Phases: []Phase{{Duration: 1}, {}}}, "phase 2: duration 0s is not positive"},
		{"bad conditions", Profile{Phases: []Phase{{Duration: 1, Conditions: Conditions{Loss: Always + 1}}}}, "phase 1: loss"},
		{"bad name", Profile{Name: "a b", Phases: []Phase{{Duration: 1}}}, `name "a b"`},
		{"overflow", Profile{Phases: []Phase{{Duration: 1 << 62}, {Duration: 1 << 62}}}, "phase 2: total duration overflows"},
	}
	for _, tt := range tests {
		err := tt.p.Validate()
		if !errors.Is(err, ErrInvalidProfile) || !strings.Contains(err.Error(), tt.problem) {
			t.Errorf("%s: Validate() = %v, want ErrInvalidProfile containing %q", tt.name, err, tt.problem)
		}
	}
}

func TestProfileAt(t *testing.T) {
	p := Profile{Phases: []Phase{
		{Duration: 10 * time.Second, Conditions: Conditions{Latency: 10 * time.Millisecond}},
		{Duration: 5 * time.Second, Conditions: Conditions{Latency: 100 * time.Millisecond}},
	}}
	tests := []struct {
		now  time.Duration
		want time.Duration
	}{
		{0, 10 * time.Millisecond},
		{10*time.Second - 1, 10 * time.Millisecond},
		{10 * time.Second, 100 * time.Millisecond},
		{15*time.Second - 1, 100 * time.Millisecond},
		{15 * time.Second, 10 * time.Millisecond}, // repeats
		{25 * time.Second, 100 * time.Millisecond},
		{1500*time.Second + 12*time.Second, 100 * time.Millisecond},
	}
	for _, tt := range tests {
		if got := p.At(tt.now).Latency; got != tt.want {
			t.Errorf("At(%v).Latency = %v, want %v", tt.now, got, tt.want)
		}
	}
	mustPanic(t, "At(-1)", func() { p.At(-1) })
	mustPanic(t, "At on invalid profile", func() { Profile{}.At(0) })
}

func mustPanic(t *testing.T, what string, f func()) {
	t.Helper()
	defer func() {
		if recover() == nil {
			t.Errorf("%s did not panic", what)
		}
	}()
	f()
}
