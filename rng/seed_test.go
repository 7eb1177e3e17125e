package rng

import "testing"

func TestSharedSeedIgnoresOrder(t *testing.T) {
	a := SharedSeed([][]byte{[]byte("one"), []byte("two"), []byte("three")})
	b := SharedSeed([][]byte{[]byte("three"), []byte("one"), []byte("two")})
	if a != b {
		t.Fatal("SharedSeed depends on the order of contributions")
	}
	if a == SharedSeed([][]byte{[]byte("one"), []byte("two"), []byte("four")}) {
		t.Fatal("SharedSeed ignores a contribution")
	}
	// Length prefixes keep concatenation-equal sets apart.
	if SharedSeed([][]byte{[]byte("ab"), []byte("c")}) == SharedSeed([][]byte{[]byte("a"), []byte("bc")}) {
		t.Fatal("SharedSeed confuses contribution boundaries")
	}
}

func TestSharedSeedDoesNotModifyInput(t *testing.T) {
	in := [][]byte{[]byte("z"), []byte("a")}
	SharedSeed(in)
	if string(in[0]) != "z" || string(in[1]) != "a" {
		t.Fatal("SharedSeed reordered its input")
	}
}

func TestCommitReveal(t *testing.T) {
	c := Commit([]byte("secret"))
	if !VerifyCommit(c, []byte("secret")) {
		t.Fatal("commitment does not verify its own contribution")
	}
	if VerifyCommit(c, []byte("secreT")) {
		t.Fatal("commitment verifies a different contribution")
	}
}
