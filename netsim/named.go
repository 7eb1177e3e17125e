package netsim

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// ErrUnknownProfile is wrapped by the error [Named] returns for a name it
// does not know; the message lists the names it does.
var ErrUnknownProfile = errors.New("netsim: unknown profile")

// namedProfiles returns the built-in profiles, worst last. It builds them
// afresh on every call so no caller can change another's copy. Each is one
// phase of a minute, repeated: constant conditions. docs/profiles.md
// tabulates them; keep the two in step.
func namedProfiles() []Profile {
	one := func(name string, c Conditions) Profile {
		return Profile{Name: name, Phases: []Phase{{Duration: time.Minute, Conditions: c}}}
	}
	return []Profile{
		// Switched Ethernet in one building.
		one("lan", Conditions{
			Latency: 250 * time.Microsecond,
			Jitter:  100 * time.Microsecond,
		}),
		// Home fibre, cable or DSL to a peer in the same region.
		one("broadband", Conditions{
			Latency:      15 * time.Millisecond,
			Jitter:       3 * time.Millisecond,
			Loss:         1_000, // 0.1%
			Reorder:      100,   // 0.01%
			ReorderDelay: 2 * time.Millisecond,
			Bandwidth:    1_250_000, // 10 Mbit/s up
			Queue:        50 * time.Millisecond,
		}),
		// Broadband across an ocean, for example Europe to the US west coast.
		one("intercontinental", Conditions{
			Latency:      80 * time.Millisecond,
			Jitter:       6 * time.Millisecond,
			Loss:         5_000, // 0.5%
			Burst:        Burst{Enter: 2_000, Leave: 400_000, LossBad: 500_000},
			Reorder:      1_000, // 0.1%
			ReorderDelay: 5 * time.Millisecond,
			Bandwidth:    1_250_000,
			Queue:        100 * time.Millisecond,
		}),
		// Congested Wi-Fi or a mobile link: about 12.8% loss, mostly in bursts.
		one("bad", Conditions{
			Latency:      60 * time.Millisecond,
			Jitter:       40 * time.Millisecond,
			Loss:         20_000, // 2%
			Burst:        Burst{Enter: 40_000, Leave: 250_000, LossBad: 800_000},
			Reorder:      20_000, // 2%
			ReorderDelay: 30 * time.Millisecond,
			Duplicate:    10_000,  // 1%
			Bandwidth:    250_000, // 2 Mbit/s up
			Queue:        200 * time.Millisecond,
		}),
		// A 28.8 kbit/s dial-up modem (V.34) with a deep buffer.
		one("modem", Conditions{
			Latency:   70 * time.Millisecond,
			Jitter:    10 * time.Millisecond,
			Loss:      5_000, // 0.5%
			Bandwidth: 3_600, // 28.8 kbit/s
			Queue:     500 * time.Millisecond,
		}),
	}
}

// Names returns the names [Named] knows, from the best network to the
// worst: lan, broadband, intercontinental, bad, modem. The slice is the
// caller's.
func Names() []string {
	ps := namedProfiles()
	names := make([]string, len(ps))
	for i, p := range ps {
		names[i] = p.Name
	}
	return names
}

// Named returns the built-in profile called name (see [Names] and
// docs/profiles.md). The profile is the caller's to change. For an unknown
// name it returns an error wrapping [ErrUnknownProfile] that lists the known
// names.
func Named(name string) (Profile, error) {
	for _, p := range namedProfiles() {
		if p.Name == name {
			return p, nil
		}
	}
	return Profile{}, fmt.Errorf("%w %q (known: %s)", ErrUnknownProfile, name, strings.Join(Names(), ", "))
}
