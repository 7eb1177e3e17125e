// Copyright notice of the file, then the directive in its own comment group.

//phalanx:deterministic this package is replayed by every peer

package markedlater

func Spawn(f func()) {
	go f() // want `go statement`
}
