package determinism_test

import (
	"fmt"

	"github.com/phalanx-net/phalanx/determinism"
	"github.com/phalanx-net/phalanx/rng"
)

func ExampleFixed() {
	a := determinism.FromInt(3)
	b := determinism.FromFraction(1, 4)
	fmt.Println(a.Add(b), a.Sub(b), a.Mul(b), a.Div(b))

	// Division rounds to the nearest multiple of 2^-32; String is exact.
	third := determinism.One.Div(determinism.FromInt(3))
	fmt.Println(third)
	fmt.Println(third.MulInt(3) == determinism.One)

	x := determinism.FromFraction(-7, 2)
	fmt.Println(x, x.Floor(), x.Ceil(), x.Round(), x.Frac(), x.Int())
	// Output:
	// 3.25 2.75 0.75 12
	// 0.33333333325572311878204345703125
	// false
	// -3.5 -4 -3 -4 0.5 -4
}

func ExampleSqrt() {
	fmt.Println(determinism.Sqrt(determinism.FromInt(9)))
	fmt.Println(determinism.Sqrt(determinism.FromInt(2))) // rounded down
	fmt.Println(determinism.Sqrt(determinism.Epsilon))    // 2^-16, exact
	// Output:
	// 3
	// 1.41421356215141713619232177734375
	// 0.0000152587890625
}

func ExampleSin() {
	for _, x := range []determinism.Fixed{0, determinism.HalfPi, determinism.Pi, determinism.FromInt(1000)} {
		fmt.Printf("%.9f %.9f\n", determinism.Sin(x).Float64(), determinism.Cos(x).Float64())
	}
	// Output:
	// 0.000000000 1.000000000
	// 1.000000000 0.000000000
	// 0.000000000 -1.000000000
	// 0.826879540 0.562379076
}

func ExampleAtan2() {
	one := determinism.One
	fmt.Printf("%.9f\n", determinism.Atan2(one, one).Float64())
	fmt.Printf("%.9f\n", determinism.Atan2(-one, 0).Float64())
	fmt.Println(determinism.Atan2(0, -one) == determinism.Pi)
	fmt.Println(determinism.Atan2(0, 0))
	// Output:
	// 0.785398163
	// -1.570796327
	// true
	// 0
}

func ExampleVec2() {
	v := determinism.V2(determinism.FromInt(3), determinism.FromInt(4))
	fmt.Println(v.Len(), v.LenSq(), v.Dot(determinism.V2(determinism.One, determinism.One)))
	fmt.Println(v.Normalize())
	fmt.Println(v.Rotate(determinism.HalfPi))
	// Output:
	// 5 25 7
	// (0.6000000000931322574615478515625, 0.80000000004656612873077392578125)
	// (-4, 3)
}

func ExampleUniformRange() {
	r := rng.New(42, 54) // every member seeds the same stream
	// Six equally likely integer parts: a die roll.
	var rolls []int64
	for range 8 {
		rolls = append(rolls, determinism.UniformRange(r, determinism.One, determinism.FromInt(7)).Int())
	}
	fmt.Println(rolls)
	fmt.Println(determinism.Unit(r))
	// Output:
	// [4 3 2 6 1 1 5 4]
	// 0.6335996040143072605133056640625
}

func ExampleHasher() {
	h := determinism.NewHasher()
	h.Section("units")
	h.WriteInt(2) // unit count
	h.WriteVec2(determinism.V2(determinism.FromInt(10), determinism.Half))
	h.WriteVec2(determinism.V2(determinism.FromInt(-3), determinism.One))
	h.Section("players")
	h.WriteString("alice")
	h.WriteInt64(500) // gold

	fmt.Printf("state %#016x\n", h.Sum64())
	for _, s := range h.Sections() {
		fmt.Printf("%-7s %#016x\n", s.Name, s.Hash)
	}
	// Output:
	// state 0x386528018c5813bb
	// units   0x45f6498f467a2401
	// players 0x939b444867d8c320
}

func ExampleSortedKeys() {
	hp := map[string]int{"zergling": 35, "marine": 45, "hydralisk": 80}
	for _, name := range determinism.SortedKeys(hp) {
		fmt.Println(name, hp[name])
	}
	// Output:
	// hydralisk 80
	// marine 45
	// zergling 35
}

func ExampleSorted() {
	positions := map[int]determinism.Vec2{
		7: determinism.V2(determinism.One, 0),
		2: determinism.V2(0, determinism.Half),
	}
	for id, p := range determinism.Sorted(positions) {
		fmt.Println(id, p)
	}
	// Output:
	// 2 (0, 0.5)
	// 7 (1, 0)
}
