package delay

import "time"

// Tail keeps the upper tail of the durations measured over a sliding window
// of time: the window is cut into blocks of equal length, and each block
// keeps how many samples it saw, their sum and its largest few. From that
// it answers which duration all but a given share of the window's samples
// stayed within ([Tail.Quantile]): in hindsight, the smallest lead that
// would have brought all but that share of the news on time.
//
// The window moves by the times given to it (the caller's clock, virtual in
// tests), so the same samples at the same times give the same answers. It
// allocates only when created; adding a sample costs at most a shift of its
// block's largest, a quantile a merge of the blocks' largest down to its
// rank.
//
// A Tail is not safe for concurrent use.
type Tail struct {
	block   time.Duration
	start   time.Duration // when the current block began
	started bool
	cur     int // the current block
	blocks  []tailBlock
	keep    int
	heads   []int         // Quantile's merge positions, one per block
	n       int           // the blocks' samples, summed (Len and Mean read it without walking them)
	sum     time.Duration // and their sum
}

type tailBlock struct {
	n   int
	sum time.Duration
	top []time.Duration // the block's largest candidates, largest first; at most keep
}

// NewTail returns a window of blocks blocks of length block each, each
// keeping its keep largest samples. It panics if any is below 1.
func NewTail(block time.Duration, blocks, keep int) *Tail {
	if block <= 0 || blocks < 1 || keep < 1 {
		panic("delay: NewTail with a block length, block count or keep below 1")
	}
	t := &Tail{block: block, blocks: make([]tailBlock, blocks), keep: keep, heads: make([]int, blocks)}
	for i := range t.blocks {
		t.blocks[i].top = make([]time.Duration, 0, keep)
	}
	return t
}

// rotate moves the window to now: every block that ended by now is
// replaced by an empty one. A time before the current block's start
// counts in the current block.
func (t *Tail) rotate(now time.Duration) {
	if !t.started {
		t.started, t.start = true, now
		return
	}
	for i := 0; now-t.start >= t.block; i++ {
		if i == len(t.blocks) {
			// Silent for longer than the window: every block is empty.
			t.start = now
			break
		}
		t.start += t.block
		t.cur = (t.cur + 1) % len(t.blocks)
		t.clear(t.cur)
	}
}

// clear empties block i.
func (t *Tail) clear(i int) {
	b := &t.blocks[i]
	t.n, t.sum = t.n-b.n, t.sum-b.sum
	b.n, b.sum, b.top = 0, 0, b.top[:0]
}

// Add records sample d measured at now. A sample that is not a candidate
// counts in the window's size and mean but is never one of its largest: a
// measurement too crude to set the tail on its own.
func (t *Tail) Add(now, d time.Duration, candidate bool) {
	t.rotate(now)
	b := &t.blocks[t.cur]
	b.n++
	b.sum += d
	t.n++
	t.sum += d
	if !candidate {
		return
	}
	i := len(b.top)
	for i > 0 && b.top[i-1] < d {
		i--
	}
	if i == t.keep {
		return
	}
	if len(b.top) < t.keep {
		b.top = append(b.top, 0)
	}
	copy(b.top[i+1:], b.top[i:len(b.top)-1])
	b.top[i] = d
}

// Forget empties every block but the current one: the caller saw the
// measurements shift, and the older ones no longer describe what it
// measures.
func (t *Tail) Forget() {
	for i := range t.blocks {
		if i != t.cur {
			t.clear(i)
		}
	}
}

// Reset empties every block: the caller saw the measurements shift, and
// none of the older ones describes what it measures.
func (t *Tail) Reset() {
	for i := range t.blocks {
		t.clear(i)
	}
}

// PastWorst returns, at now, the largest candidate of the blocks before
// the current one, or 0 when they hold none or none above 0 (it is never
// negative): the worst of the window but what was measured since the
// current block began, against which a caller can tell a change of what it
// measures from the window's own tail.
func (t *Tail) PastWorst(now time.Duration) time.Duration {
	t.rotate(now)
	var worst time.Duration
	for i, b := range t.blocks {
		if i != t.cur && len(b.top) > 0 {
			worst = max(worst, b.top[0])
		}
	}
	return worst
}

// Len returns how many samples the window holds at now.
func (t *Tail) Len(now time.Duration) int {
	t.rotate(now)
	return t.n
}

// Mean returns the mean of the window's samples at now, or 0 when it holds
// none.
func (t *Tail) Mean(now time.Duration) time.Duration {
	t.rotate(now)
	if t.n == 0 {
		return 0
	}
	return t.sum / time.Duration(t.n)
}

// Quantile returns, at now, the smallest duration that all but a share
// share (0 <= share < 1) of the window's n samples stayed within: the
// candidate of rank ceil(share·n) from the top, counting from 1, but at
// least rank 1 (with few samples, the largest) and at most the rank a block
// keeps (the answer is then higher than the share asks). It returns 0 when
// the window holds no candidate, and the smallest candidate when it holds
// fewer than the rank.
func (t *Tail) Quantile(now time.Duration, share float64) time.Duration {
	n := t.Len(now)
	rank := max(1, min(int(share*float64(n)+0.999999), t.keep))
	for i := range t.heads {
		t.heads[i] = 0
	}
	var got time.Duration
	for range rank {
		best := -1
		for i := range t.blocks {
			if h := t.heads[i]; h < len(t.blocks[i].top) && (best < 0 || t.blocks[i].top[h] > t.blocks[best].top[t.heads[best]]) {
				best = i
			}
		}
		if best < 0 {
			break
		}
		got = t.blocks[best].top[t.heads[best]]
		t.heads[best]++
	}
	return got
}
