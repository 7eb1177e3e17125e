// Package unmarked holds every flagged construct but is not marked, so
// detcheck reports nothing. The directive below comes after the package clause
// and therefore does not mark the package.
package unmarked

//phalanx:deterministic

import (
	crand "crypto/rand"
	"hash/maphash"
	"math"
	"math/rand"
	"os"
	"syscall"
	"time"
	"unsafe"
)

func Everything(m map[string]int, a, b float64, ch chan int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	c := a*b + 1.5
	c += math.Sqrt(a)
	n += int(c)
	_ = time.Now()
	n += rand.Intn(6)
	crand.Read(nil)
	_ = maphash.MakeSeed()
	go func() {}()
	select {
	case v := <-ch:
		n += v
	default:
	}
	ch <- 1
	close(ch)
	_ = make(chan int)
	n += len(os.Getenv("HOME"))
	n += syscall.Getpid()
	n += int(unsafe.Sizeof(n))
	return n
}
