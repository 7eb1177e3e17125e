//phalanx:deterministic

// Package randuse exercises the rand rule.
package randuse

import (
	crand "crypto/rand"   // want `import of crypto/rand`
	"math/rand"           // want `import of math/rand: random numbers not derived from the session seed`
	randv2 "math/rand/v2" // want `import of math/rand/v2`
)

func Roll(r *rand.Rand) int {
	n := rand.Intn(6)                         // want `rand.Intn \(math/rand\)`
	n += r.Intn(6)                            // want `\(\*rand.Rand\).Intn \(math/rand\)`
	n += randv2.IntN(6)                       // want `rand.IntN \(math/rand/v2\)`
	seeded := randv2.New(randv2.NewPCG(1, 2)) // want `rand.New \(math/rand/v2\)` `rand.NewPCG \(math/rand/v2\)`
	n += seeded.IntN(6)                       // want `\(\*rand.Rand\).IntN`
	crand.Read(nil)                           // want `rand.Read \(crypto/rand\)`
	return n
}
