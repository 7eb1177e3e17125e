// Package detcheck is a static analyzer that reports non-deterministic code
// in packages that declare themselves deterministic, such as lockstep
// simulations, and follows their calls into other packages.
//
// It is built on golang.org/x/tools/go/analysis: [Analyzer] (or one made by
// [New] with some rules switched off) runs under any analysis driver, such
// as the "phalanx vet" command, analysistest or multichecker. docs/vet.md in
// the repository describes every rule with examples and fixes.
//
// # Marking a package
//
// Only packages marked deterministic are checked. A package is marked when
// any of its non-test files carries the line comment
//
//	//phalanx:deterministic
//
// in a comment before its package clause (by convention in doc.go). The
// directive must be spelled exactly so, with no space after "//"; it may be
// followed by a space and free text. Test files are neither checked nor
// considered for the marking. A misspelled directive ("// phalanx:deterministic",
// "//phalanx:determinstic") or one after the package clause is reported under
// the rule "directive", in any package.
//
// # Following calls
//
// On every package that is not marked (except the standard library, whose
// relevant functions the analyzer knows by name) the analyzer computes a
// [Fact] per function: which root causes it reaches in its own body or
// through the functions it calls (map order, transcendental math, float
// arithmetic on a float vector type or returning floats, the clock,
// randomness, per-process hashing, pointer values, the runtime
// environment). A marked package calling such a function gets the finding
// at the call, with the call path:
//
//	map order via mapkeys.Keys: range over map at mapkeys/mapkeys.go:13 [maprange]
//
// # Rules
//
// Each finding names its rule in brackets at the end of the message. The
// rules, by their short stable names ([Rules] lists them):
//
//   - maprange: a range over a map whose body depends on the order (bodies
//     made only of commutative integer accumulation, counting, integer
//     min/max, writes into another map keyed by the range key or of a
//     constant, deletes, per-element updates, and appends to a slice sorted
//     by the next statement, calling nothing but builtins, conversions and
//     pure functions of the package, are not reported); maps.Keys, maps.Values and
//     maps.All unless sorted at once; sync.Map.Range; reflect's MapKeys and
//     MapRange; a call reaching any of those in another package.
//   - float: a statement that computes on floats (arithmetic, op-assign,
//     increment, math's transcendental functions, calls into another
//     package's float code) whose value reaches the simulation: stored
//     outside the function's locals, deciding a branch, loop or switch,
//     returned by an exported function, sent on a channel, or initialising a
//     package variable. Values flow through locals, unexported functions'
//     results and parameters. One finding per statement, naming every
//     operation in it.
//   - sort: sort.Slice, sort.Sort and slices.SortFunc whose comparator can
//     tie (it does not end comparing whole values or a field named ID).
//   - clock: time.Now and the other clock functions of package time.
//   - rand: math/rand, math/rand/v2 and crypto/rand, seeded or not.
//   - maphash: hash/maphash, seeded at random per process.
//   - pointer: the %p verb in fmt formats, uintptr of an unsafe.Pointer,
//     reflect.Value.Pointer.
//   - env: the environment, the file system, syscall, and the machine
//     (runtime.NumCPU, GOMAXPROCS, GOOS, GOARCH, Version).
//   - goroutine, select, chan: go statements, select statements, and
//     channels, once per channel; not a channel made in a function, filled
//     by the one goroutine it starts (which assigns nothing it shares) and
//     drained by the function itself, nor workers started in a loop that
//     each write only their own element of a result.
//   - unsafe: importing package unsafe.
//   - directive: misspelled, misplaced or malformed //phalanx: comments.
//
// Findings of the clock, rand, maphash, pointer and env rules in one
// statement are one finding: rand.Seed(time.Now().UnixNano()) is one bug.
//
// # Allowing a finding
//
// A finding that is deterministic after all is allowed by a comment
//
//	//phalanx:allow RULE reason
//
// where RULE is a rule name (or several joined by commas) and the reason is
// free text that must not be empty. Where the comment is decides what it
// covers: on a line, or alone on the line before one, that line; in the doc
// comment of a function or declaration, all of it; in a file's header
// comment above the package clause, that file; in the package doc comment,
// the whole package. A malformed allow comment, and in a marked package one
// that allows nothing, is reported under "directive", which cannot be
// allowed.
//
// The analyzer keeps no state between runs and is safe for concurrent use.
package detcheck
