package quantile

import "math"

const (
	// Alpha is the relative accuracy of every reported percentile.
	Alpha = 0.01
	// Smallest is the smallest value told apart from zero.
	Smallest = 1e-9
	// Largest is the largest value counted in a bucket of its own.
	Largest = 1e15
)

var (
	gamma    = (1 + Alpha) / (1 - Alpha)
	lnGamma  = math.Log(gamma)
	minIndex = index(Smallest)
	maxIndex = index(Largest)
)

// MaxBuckets is the most counters a Sketch holds.
var MaxBuckets = maxIndex - minIndex + 1

// index returns the bucket of a value of at least Smallest.
func index(v float64) int { return int(math.Ceil(math.Log(v) / lnGamma)) }

// tops[i-minIndex] is the largest value index puts in bucket i, for every
// bucket below maxIndex, found with index itself (makeTops): bucket finds
// a value's bucket among them without a logarithm.
var tops = makeTops()

// log2Mantissa[k] is log₂(1 + k/256): with a value's binary exponent, an
// estimate of its logarithm within log₂(1 + 1/256), a fifth of a bucket.
var log2Mantissa = func() (t [256]float64) {
	for k := range t {
		t[k] = math.Log2(1 + float64(k)/256)
	}
	return t
}()

// makeTops returns tops: for each bucket, γ^i moved to the last value
// index puts in it. index rises with its argument (math.Log is accurate to
// less than a unit in the last place, and a bucket's edge is where
// log(v)/ln γ crosses an integer: away from an edge by more than a few
// units, a value cannot fall on the wrong side of it; TestBucketIsIndex
// checks every value near every edge), so the values between two tops are
// exactly those of one bucket.
func makeTops() []float64 {
	t := make([]float64, maxIndex-minIndex)
	for j := range t {
		i := j + minIndex
		v := math.Pow(gamma, float64(i))
		for index(v) > i {
			v = math.Nextafter(v, 0)
		}
		for next := math.Nextafter(v, math.Inf(1)); index(next) <= i; next = math.Nextafter(v, math.Inf(1)) {
			v = next
		}
		t[j] = v
	}
	return t
}

// bucket returns min(index(v), maxIndex), the same, for a finite v of at
// least Smallest, and maxIndex for +Inf: it estimates the bucket from v's
// binary exponent and mantissa (about half the time of math.Log:
// BenchmarkBucket) and settles it against tops.
func bucket(v float64) int {
	if !(v <= tops[len(tops)-1]) {
		return maxIndex // past the last edge (+Inf too, whose logarithm has no integer bucket)
	}
	b := math.Float64bits(v)
	l2 := float64(int(b>>52&0x7ff)-1023) + log2Mantissa[b>>44&0xff]
	i := int(math.Ceil(l2 / log2Gamma)) // log2Mantissa rounds down: at most a bucket low
	i = min(max(i, minIndex), maxIndex)
	for i > minIndex && v <= tops[i-1-minIndex] {
		i--
	}
	for i < maxIndex && v > tops[i-minIndex] {
		i++
	}
	return i
}

var log2Gamma = math.Log2(gamma)

// A Sketch summarises a stream of non-negative values. Its zero value is
// empty and ready to use. It is not safe for concurrent use.
type Sketch struct {
	zeros    uint64   // values below Smallest
	counts   []uint32 // counts[i] is bucket offset+i, less its carries: 4 bytes, so that a sketch's counters take half the caches 8 would
	offset   int
	carries  map[int]uint64 // bucket i's count beyond counts, in whole 2³²s: a counter that would pass 2³²−1 carries into it
	n        uint64
	sum      float64
	min, max float64
}

// Add counts one value. Negative values and NaN count as zero.
func (s *Sketch) Add(v float64) {
	v, ok := s.see(v)
	if !ok {
		return
	}
	i := bucket(v)
	s.grow(i)
	s.inc(i, &s.counts[i-s.offset])
}

// see counts v in the count, sum, smallest and largest, v below zero or
// NaN as zero, and in the zeros if it is below Smallest; it returns v so
// mended, and whether it goes in a bucket.
func (s *Sketch) see(v float64) (float64, bool) {
	if !(v > 0) {
		v = 0
	}
	if s.n == 0 || v < s.min {
		s.min = v
	}
	if s.n == 0 || v > s.max {
		s.max = v
	}
	s.n++
	s.sum += v
	if v < Smallest {
		s.zeros++
		return v, false
	}
	return v, true
}

// inc adds one to bucket i, whose counter is c.
func (s *Sketch) inc(i int, c *uint32) {
	if *c == math.MaxUint32 {
		s.carry(i, c, 1)
		return
	}
	*c++
}

// carry adds k to bucket i, whose counter c cannot take it: the counter
// keeps what is left below 2³², the carries the whole 2³²s (a bucket
// passes 2³²−1 values after 49 days at a thousand a second).
func (s *Sketch) carry(i int, c *uint32, k uint32) {
	sum := uint64(*c) + uint64(k)
	s.addCarries(i, sum>>32)
	*c = uint32(sum)
}

// addCarries adds k whole 2³²s to bucket i's carries.
func (s *Sketch) addCarries(i int, k uint64) {
	if s.carries == nil {
		s.carries = map[int]uint64{}
	}
	s.carries[i] += k
}

// AddAll counts the values vs as Add would, one after another, and faster
// where the counters are not in the caches: it finds the buckets of a
// batch of values before it counts any, so that the loads of their
// counters wait for memory together rather than one at a time.
func (s *Sketch) AddAll(vs []float64) {
	var idx [32]int32
	for len(vs) > 0 {
		batch := vs[:min(len(vs), len(idx))]
		vs = vs[len(batch):]
		k, lo, hi := 0, 0, 0
		for _, v := range batch {
			v, ok := s.see(v)
			if !ok {
				continue
			}
			i := bucket(v)
			if k == 0 {
				lo, hi = i, i
			}
			lo, hi = min(lo, i), max(hi, i)
			idx[k] = int32(i)
			k++
		}
		if k == 0 {
			continue
		}
		s.grow(lo) // the same span as growing for each value in turn
		s.grow(hi)
		counts, offset := s.counts, s.offset
		for _, i := range idx[:k] {
			s.inc(int(i), &counts[int(i)-offset])
		}
	}
}

// grow makes room for bucket i in counts.
func (s *Sketch) grow(i int) {
	switch {
	case len(s.counts) == 0:
		s.counts, s.offset = make([]uint32, 1, 16), i
	case i < s.offset:
		c := make([]uint32, len(s.counts)+s.offset-i)
		copy(c[s.offset-i:], s.counts)
		s.counts, s.offset = c, i
	case i >= s.offset+len(s.counts):
		s.counts = append(s.counts, make([]uint32, i-s.offset-len(s.counts)+1)...)
	}
}

// Merge adds every value counted in o to s.
func (s *Sketch) Merge(o *Sketch) {
	if o.n == 0 {
		return
	}
	if s.n == 0 || o.min < s.min {
		s.min = o.min
	}
	if s.n == 0 || o.max > s.max {
		s.max = o.max
	}
	s.n += o.n
	s.sum += o.sum
	s.zeros += o.zeros
	if len(o.counts) > 0 {
		s.grow(o.offset)
		s.grow(o.offset + len(o.counts) - 1)
		for i, c := range o.counts {
			b := o.offset + i
			if sc := &s.counts[b-s.offset]; *sc > math.MaxUint32-c {
				s.carry(b, sc, c)
			} else {
				*sc += c
			}
		}
	}
	for b, k := range o.carries {
		s.addCarries(b, k)
	}
}

// Count returns how many values were added.
func (s *Sketch) Count() int64 { return int64(s.n) }

// Mean returns the exact mean of the values added, or 0 for none.
func (s *Sketch) Mean() float64 {
	if s.n == 0 {
		return 0
	}
	return s.sum / float64(s.n)
}

// Max returns the largest value added (exact), or 0 for none.
func (s *Sketch) Max() float64 { return s.max }

// Min returns the smallest value added (exact), or 0 for none.
func (s *Sketch) Min() float64 { return s.min }

// Quantile returns the nearest-rank p-th percentile (p in [0, 100]) of the
// values added, within the relative accuracy Alpha of the exact one (see
// the package doc), or 0 for none.
func (s *Sketch) Quantile(p float64) float64 {
	if s.n == 0 {
		return 0
	}
	rank := uint64(math.Ceil(p / 100 * float64(s.n)))
	switch {
	case rank <= 1:
		return s.min
	case rank >= s.n:
		return s.max
	case rank <= s.zeros:
		return 0 // the values below Smallest, reported as zero
	}
	seen := s.zeros
	for i, c := range s.counts {
		seen += uint64(c)
		if s.carries != nil {
			seen += s.carries[s.offset+i] << 32
		}
		if seen >= rank {
			v := 2 * math.Pow(gamma, float64(s.offset+i)) / (gamma + 1)
			return min(max(v, s.min), s.max)
		}
	}
	return s.max
}
