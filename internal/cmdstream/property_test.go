package cmdstream

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
)

// promise is one (seal, next) pair a member sent: no command with a sequence
// number at or past next carries a frame at or below seal.
type promise struct {
	seal Frame
	next uint32
}

// sentStream is a valid stream as its member produced it: its commands, every
// promise it made along the way (in the order made) and its initial seal.
type sentStream struct {
	slot     Slot
	initial  Frame
	commands []Command
	promises []promise
}

// genStream generates a valid stream with the member's own Stream (so Append
// and SetSeal police it): frames never decrease, runs of equal frames are
// common, and the seal trails, meets or passes the newest frame.
func genStream(rng *rand.Rand) sentStream {
	st := sentStream{slot: Slot(rng.IntN(MaxMembers)), initial: Frame(rng.IntN(4)) - 1}
	own := NewStream(st.slot, st.initial)
	steps := 10 + rng.IntN(70)
	for range steps {
		switch r := rng.IntN(10); {
		case r < 6: // the member issues a command
			lo := max(own.LastFrame(), own.Seal()+1)
			f := lo + Frame(rng.IntN(3)*rng.IntN(2)) // often the same frame again
			c := Command{Slot: st.slot, Seq: own.Next(), Frame: f, Payload: fmt.Appendf(nil, "%d:%d:%d", own.Next(), f, rng.Uint32())}
			own.Append(c)
			st.commands = append(st.commands, c)
		case r < 8: // the member moves its seal
			seal := own.Seal() + Frame(rng.IntN(4))
			if rng.IntN(3) == 0 && own.LastFrame() > seal {
				seal = own.LastFrame() // tight: seals the newest frame exactly
			}
			own.SetSeal(seal)
			st.promises = append(st.promises, promise{own.Seal(), own.Next()})
		default: // a datagram repeats the current promise
			st.promises = append(st.promises, promise{own.Seal(), own.Next()})
		}
	}
	// The member seals everything it sent, so a receiver can end caught up.
	own.SetSeal(max(own.Seal(), own.LastFrame()))
	st.promises = append(st.promises, promise{own.Seal(), own.Next()})
	return st
}

// valid checks the generator: it must produce only honest streams, or the
// property test below proves nothing.
func (st sentStream) valid() error {
	for i, c := range st.commands {
		if c.Seq != uint32(i) || c.Slot != st.slot {
			return fmt.Errorf("command %d is %+v", i, c)
		}
		if i > 0 && c.Frame < st.commands[i-1].Frame {
			return fmt.Errorf("frame decreases at seq %d", i)
		}
		if c.Frame <= st.initial {
			return fmt.Errorf("seq %d frame %d under the initial seal %d", i, c.Frame, st.initial)
		}
	}
	for i, p := range st.promises {
		if i > 0 && (p.seal < st.promises[i-1].seal || p.next < st.promises[i-1].next) {
			return fmt.Errorf("promise %d %+v goes back from %+v", i, p, st.promises[i-1])
		}
		for _, c := range st.commands[p.next:] {
			if c.Frame <= p.seal {
				return fmt.Errorf("promise %+v broken by seq %d frame %d", p, c.Seq, c.Frame)
			}
		}
	}
	return nil
}

// sealSafe checks the core safety property of a receiving stream recv of st
// whose frames up to executed have been executed and trimmed: for every
// frame f in (executed, recv.Seal()], recv holds every command of st stamped
// f, and nothing else, and the held prefix is exactly st's.
func sealSafe(recv *Stream, st sentStream, executed Frame) error {
	if int(recv.Next()) > len(st.commands) {
		return fmt.Errorf("Next %d past the %d commands sent", recv.Next(), len(st.commands))
	}
	if got, want := recv.Since(0), st.commands[recv.Base():recv.Next()]; !sameCommands(got, want) {
		return fmt.Errorf("held prefix %v, want %v", got, want)
	}
	for _, c := range st.commands {
		if c.Frame > executed && c.Frame <= recv.Seal() && c.Seq >= recv.Next() {
			return fmt.Errorf("seal %d claims frame %d, but seq %d (frame %d) is missing (Next %d)",
				recv.Seal(), c.Frame, c.Seq, c.Frame, recv.Next())
		}
	}
	return nil
}

// bucketOf returns st's commands stamped frame.
func (st sentStream) bucketOf(frame Frame) []Command {
	var b []Command
	for _, c := range st.commands {
		if c.Frame == frame {
			b = append(b, c)
		}
	}
	return b
}

// TestStreamDeliveryProperty delivers each generated stream's commands and
// promises to a receiving Stream in a shuffled order, with duplicates, and
// checks after every delivery that the receiver's seal never claims a frame
// whose commands it lacks. In the "execute" mode the receiver also executes
// every frame its seal allows, as the engine does, checks each bucket
// against the sent one, and trims what it executed.
func TestStreamDeliveryProperty(t *testing.T) {
	const iterations = 300
	for _, execute := range []bool{false, true} {
		t.Run(fmt.Sprintf("execute=%v", execute), func(t *testing.T) {
			var pendingApplied, reorders int
			for iter := range iterations {
				rng := rand.New(rand.NewPCG(uint64(iter), 0x9e3779b97f4a7c15))
				st := genStream(rng)
				if err := st.valid(); err != nil {
					t.Fatalf("iteration %d: generator made an invalid stream: %v", iter, err)
				}
				type delivery struct {
					c       *Command
					promise promise
				}
				var ds []delivery
				for i := range st.commands {
					for range 1 + rng.IntN(2)*rng.IntN(3) {
						ds = append(ds, delivery{c: &st.commands[i]})
					}
				}
				for _, p := range st.promises {
					for range 1 + rng.IntN(2) {
						ds = append(ds, delivery{promise: p})
					}
				}
				rng.Shuffle(len(ds), func(i, j int) { ds[i], ds[j] = ds[j], ds[i] })

				recv := NewStream(st.slot, st.initial)
				executed := st.initial // frames up to here hold no command
				var buckets []Command  // every command executed, in order
				for step, d := range ds {
					sealBefore, nextBefore := recv.Seal(), recv.Next()
					if d.c != nil {
						if d.c.Seq > recv.Next() {
							reorders++
						}
						if _, err := recv.Insert(*d.c); err != nil {
							t.Fatalf("iteration %d step %d: honest Insert(%+v): %v", iter, step, *d.c, err)
						}
						if recv.Seal() > sealBefore {
							pendingApplied++
						}
					} else {
						recv.Promise(d.promise.seal, d.promise.next)
					}
					if recv.Seal() < sealBefore || recv.Next() < nextBefore {
						t.Fatalf("iteration %d step %d: seal or prefix went back: (%d, %d) -> (%d, %d)",
							iter, step, sealBefore, nextBefore, recv.Seal(), recv.Next())
					}
					if err := sealSafe(recv, st, executed); err != nil {
						t.Fatalf("iteration %d step %d: %v", iter, step, err)
					}
					if !execute {
						continue
					}
					for ; executed < recv.Seal(); executed++ {
						f := executed + 1
						got := recv.AppendFrame(nil, f)
						if want := st.bucketOf(f); !sameCommands(got, want) {
							t.Fatalf("iteration %d step %d: bucket %d = %v, want %v", iter, step, f, got, want)
						}
						buckets = append(buckets, got...)
					}
					// Forget what was executed: everything before the first
					// held command stamped after executed.
					trim := recv.Base()
					for _, c := range recv.Since(0) {
						if c.Frame > executed {
							break
						}
						trim++
					}
					recv.Trim(trim)
				}

				final := st.promises[len(st.promises)-1]
				if recv.Next() != uint32(len(st.commands)) || recv.Buffered() != 0 || recv.Seal() != final.seal {
					t.Fatalf("iteration %d: end at Next %d Buffered %d Seal %d, want %d 0 %d",
						iter, recv.Next(), recv.Buffered(), recv.Seal(), len(st.commands), final.seal)
				}
				if execute {
					if !sameCommands(buckets, st.commands) {
						t.Fatalf("iteration %d: executed %v, want %v", iter, buckets, st.commands)
					}
				} else if !sameCommands(recv.Since(0), st.commands) {
					t.Fatalf("iteration %d: prefix %v, want %v", iter, recv.Since(0), st.commands)
				}
			}
			// The runs must have exercised the interesting paths.
			if pendingApplied == 0 || reorders == 0 {
				t.Fatalf("weak run: %d seals applied by an Insert, %d commands past a gap", pendingApplied, reorders)
			}
		})
	}
}

// TestSealSafeDetectsLies guards the property test against a vacuous check:
// a lying promise (one whose next is too low) must be caught.
func TestSealSafeDetectsLies(t *testing.T) {
	st := sentStream{slot: 0, initial: -1, commands: []Command{cmd(0, 0, 1), cmd(0, 1, 2), cmd(0, 2, 2)}}
	recv := NewStream(0, -1)
	recv.Insert(st.commands[0])
	recv.Insert(st.commands[1])
	recv.Promise(2, 2) // a lie: seq 2 is stamped 2 too
	if err := sealSafe(recv, st, -1); err == nil {
		t.Fatal("sealSafe accepted a seal that claims frame 2 without seq 2")
	}
	// The stream itself refuses the command the lie hid.
	if _, err := recv.Insert(st.commands[2]); !errors.Is(err, ErrUnderSeal) {
		t.Fatalf("Insert of the hidden command: err = %v, want ErrUnderSeal", err)
	}
}
