// Package sources exercises the clock, rand, maphash, env and pointer
// rules, directly and through calls into other packages; one statement
// with several sources is one finding.
//
//phalanx:deterministic
package sources

import (
	crand "crypto/rand"
	"fmt"
	"hash/fnv"
	"hash/maphash"
	"math/rand"
	"os"
	"runtime"
	"time"
	"unsafe" // want `import of unsafe: memory layout and pointer values are not portable between peers \[unsafe\]`

	"debugfmt"
	"gameclock"
	"uuidgen"
)

type Unit struct {
	ID   [16]byte
	Name string
	Seed int64
	HP   int
}

func Spawn(u *Unit, start time.Time) {
	rand.Seed(time.Now().UnixNano())          // want `rand.Seed \(math/rand\): random numbers not derived from the session seed; use package rng; time.Now reads the real clock.*\[rand\]`
	u.HP = rand.Intn(6)                       // want `rand.Intn \(math/rand\).*\[rand\]`
	crand.Read(u.ID[:])                       // want `rand.Read \(crypto/rand\).*\[rand\]`
	u.ID = uuidgen.New()                      // want `randomness not derived from the session seed via uuidgen.New: rand.Read at uuidgen/uuidgen.go:10 \[rand\]`
	u.Name = uuidgen.Must()                   // want `via uuidgen.Must → uuidgen.New: rand.Read at uuidgen/uuidgen.go:10 \[rand\]`
	u.ID = uuidgen.Nil()                      // a helper that reaches nothing
	u.HP += int(gameclock.Elapsed(start))     // want `the real clock via gameclock.Elapsed: time.Since at gameclock/gameclock.go:12 \[clock\]`
	u.HP += int(gameclock.Frames(3))          // no clock reached
	u.Seed = int64(new(maphash.Hash).Sum64()) // want `maphash.Hash.Sum64: hash/maphash is seeded at random per process.*\[maphash\]`
	_ = time.Duration(5) * time.Millisecond
	h := fnv.New64a() // a fixed hash: not reported
	h.Write(u.ID[:])
	u.Seed = int64(h.Sum64()) // a duration is not the clock
}

func Machine(u *Unit) {
	u.HP = runtime.NumCPU()        // want `runtime.NumCPU describes the machine or process.*\[env\]`
	if runtime.GOARCH == "arm64" { // want `runtime.GOARCH describes the machine.*\[env\]`
		u.HP++
	}
	u.Name = runtime.GOOS + runtime.Version() // want `runtime.GOOS describes.*; runtime.Version describes.*\[env\]`
	u.Name = os.Getenv("PLAYER")              // want `os.Getenv reads the environment or file system.*\[env\]`
	u.HP = gameclock.Workers()                // want `the runtime environment via gameclock.Workers: runtime.NumCPU at gameclock/gameclock.go:17 \[env\]`
	os.Stdout.WriteString("ok")               // writing is not reading
}

func Pointers(u *Unit) {
	u.Name = debugfmt.Tag(u)                     // want `a memory address via debugfmt.Tag: %p or uintptr of a pointer at debugfmt/debugfmt.go:12 \[pointer\]`
	u.HP = debugfmt.Bucket(u.Name, 8)            // want `a per-process hash seed via debugfmt.Bucket: maphash.String at debugfmt/debugfmt.go:19 \[maphash\]`
	u.Name = debugfmt.Label(u.HP)                // reaches nothing
	u.Name = fmt.Sprintf("%p", u)                // want `fmt.Sprintf with %p formats a memory address.*\[pointer\]`
	u.Name = fmt.Sprintf("%d%%p", u.HP)          // %% is not a verb
	u.HP = int(uintptr(unsafe.Pointer(u)) % 7)   // want `uintptr of a pointer is a memory address.*\[pointer\]`
	u.Name = fmt.Sprintf("%v %-8p", u.HP, &u.HP) // want `%p formats a memory address`
}
