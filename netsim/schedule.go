package netsim

import "time"

// schedule is a validated copy of a profile's phases with their cumulative
// end times, for looking up the conditions at a time without allocating.
type schedule struct {
	phases []Phase
	ends   []time.Duration // ends[i] is the end of phase i within one period
}

// newSchedule copies p so later changes to p.Phases do not reach the model.
// It panics if p is not valid: a model built on an invalid profile is a
// programming error, and ParseProfile and Named only return valid ones.
func newSchedule(who string, p Profile) schedule {
	if err := p.Validate(); err != nil {
		panic("netsim: " + who + ": " + err.Error())
	}
	s := schedule{
		phases: append([]Phase(nil), p.Phases...),
		ends:   make([]time.Duration, len(p.Phases)),
	}
	var end time.Duration
	for i, ph := range p.Phases {
		end += ph.Duration
		s.ends[i] = end
	}
	return s
}

// at returns the conditions in force at now. It panics if now is negative.
func (s *schedule) at(now time.Duration) *Conditions {
	if now < 0 {
		panic("netsim: negative time")
	}
	if len(s.phases) == 1 {
		return &s.phases[0].Conditions
	}
	t := now % s.ends[len(s.ends)-1]
	for i, end := range s.ends {
		if t < end {
			return &s.phases[i].Conditions
		}
	}
	panic("unreachable: time modulo the period lies in no phase")
}
