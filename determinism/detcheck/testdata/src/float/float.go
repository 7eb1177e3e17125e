// Package float exercises the float rule.
//
//phalanx:deterministic
package float

import "math"

type Meters float64

func Ops(a, b float64, m Meters, n int) int {
	c := a * b  // want `float arithmetic \(\*\)`
	c = a*b + c // want `float arithmetic \(\+\)`
	c += a      // want `float arithmetic \(\+=\)`
	c++         // want `float arithmetic \(\+\+\)`
	c = -c      // want `float arithmetic \(unary -\)`
	m = m / 2   // want `float arithmetic \(/\)`
	if a < b {  // want `float comparison \(<\)`
		n++
	}
	x := 1.5                // want `float constant 1.5 of type float64`
	var y float32 = 2       // want `float constant 2 of type float32`
	_ = float64(n)          // want `conversion to float64`
	n = int(a)              // want `conversion from float64 to int`
	_ = math.Sqrt(a)        // want `math.Sqrt is floating-point`
	_ = math.Float64bits(a) // want `math.Float64bits is floating-point`
	f := math.Floor         // want `math.Floor is floating-point`
	_ = f
	_, _, _ = c, x, y
	n = int(1.5 * 2) // exact constant arithmetic, not a float value
	n = n * 3
	return n
}

func Half() float64 {
	return Mid() // want `call returning float64`
}

func Mid() float64 { return 0 } // want `float constant 0 of type float64`

type Number interface{ ~int | ~float64 }

func Add[T Number](a, b T) T {
	return a + b // want `float arithmetic \(\+\)`
}

func AddInt[T ~int | ~int64](a, b T) T {
	return a + b
}
