package main

import (
	"runtime"
	"strconv"
	"testing"

	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/lockstep"
	"github.com/phalanx-net/phalanx/lockstep/locksteptest"
)

// liveHeap collects garbage and returns the live heap in bytes.
func liveHeap() int64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

// heapSlack is how much more live heap a session four times as long may
// hold: sketches reaching a few more buckets, maps and free lists settling
// at a slightly different size. A record kept per frame or per datagram
// would exceed it many times over (the per-datagram one-way delays alone
// were 4.7 KB a frame at 8 members).
const heapSlack = 256 << 10

// simHeap plays phalanx sim's virtual session of 8 members for frames
// frames (the null simulation on the lan profile, then the cursors' dead
// reckoning) and returns the live heap at the end of each half, with
// everything the session keeps still live.
func simHeap(t *testing.T, frames int) (lockstepHeap, cursorHeap int64) {
	t.Helper()
	f := runFlags{peers: 8, frames: frames, seed: 1, profile: "lan", sim: "null", frameMS: 50, budget: -1,
		policy: "adaptive", transport: locksteptest.TransportDatagram}
	profile, err := loadProfile(f.profile)
	if err != nil {
		t.Fatal(err)
	}
	g, err := newGame(f.sim, f.peers, f.seed)
	if err != nil {
		t.Fatal(err)
	}
	hc := f.harnessConfig(profile, g)
	hc.OnStep = func(slot bucket.Slot, b lockstep.Bucket, _ lockstep.Simulation) {
		if slot == 0 && b.Frame == bucket.Frame(frames-1) {
			lockstepHeap = liveHeap()
		}
	}
	res, err := locksteptest.Run(hc)
	if err != nil || !res.Identical || res.Commands() == 0 {
		t.Fatalf("%d frames: %v, identical %v, %d commands", frames, err, res.Identical, res.Commands())
	}
	simulateCursorsThen(&f, profile, func() { cursorHeap = liveHeap() })
	return lockstepHeap, cursorHeap
}

// TestSimMemoryFlat: a virtual session four times as long ends with the
// same live heap, within heapSlack, in the lockstep half and in the
// cursors' half.
func TestSimMemoryFlat(t *testing.T) {
	if testing.Short() {
		t.Skip("plays 10,000 virtual frames of 8 members")
	}
	const n = 2000
	l1, c1 := simHeap(t, n)
	l4, c4 := simHeap(t, 4*n)
	t.Logf("live heap: lockstep %d → %d B, cursors %d → %d B", l1, l4, c1, c4)
	if l4-l1 > heapSlack || c4-c1 > heapSlack {
		t.Errorf("%d frames hold %d B more than %d frames in the lockstep half, %d B more in the cursors' half; want at most %d",
			4*n, l4-l1, n, c4-c1, heapSlack)
	}
}

// meshHeaps plays a session of three member processes over QUIC on
// loopback for frames frames of 5 ms and returns each member's live heap
// when it finished its frames, the session still open.
func meshHeaps(t *testing.T, frames int) []float64 {
	t.Helper()
	code, out, errs := runCLI(t, "mesh", "--peers", "3", "--frames", strconv.Itoa(frames), "--frame-ms", "5",
		"--profile", "lan", "--sim", "null", "--json")
	if code != 0 {
		t.Fatalf("%d frames: exit %d\n%s\n%s", frames, code, out, errs)
	}
	var heaps []float64
	for _, m := range lastJSON(t, out)["members"].([]any) {
		u := m.(map[string]any)
		h, _ := u["end_heap_kb"].(float64)
		if h <= 0 || len(u["samples"].([]any)) == 0 {
			t.Fatalf("%d frames: member %v reports no heap or no samples: %v", frames, u["index"], u)
		}
		heaps = append(heaps, h)
	}
	return heaps
}

// TestMeshMemoryFlat: member processes over real QUIC that play four
// times as long end with the same live heap, within meshHeapSlack each.
// Real sockets and goroutines make the heap vary by up to about 25 KiB
// from run to run, so this catches a record of about 130 bytes or more a
// frame (96 KiB over the 750 frames more): the dead-reckoning meters that
// kept every error grew 115 to 140 KiB here. TestSimMemoryFlat catches
// smaller ones in virtual time.
func TestMeshMemoryFlat(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three processes twice, for 1.25 s and 5 s of play")
	}
	t.Setenv("PHALANX_TEST_MEMBER", "1")
	const n, meshHeapSlack = 250, 96
	short, long := meshHeaps(t, n), meshHeaps(t, 4*n)
	t.Logf("live heap per member, KiB: %v after %d frames, %v after %d", short, n, long, 4*n)
	for i := range long {
		if long[i]-short[i] > meshHeapSlack {
			t.Errorf("member %d: %.0f KiB after %d frames, %.0f KiB after %d: more than %d KiB apart", i, short[i], n, long[i], 4*n, meshHeapSlack)
		}
	}
}
