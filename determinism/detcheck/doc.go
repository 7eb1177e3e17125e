// Package detcheck is a static analyzer that reports non-deterministic code in
// packages that declare themselves deterministic, such as lockstep simulations.
//
// It is built on golang.org/x/tools/go/analysis: [Analyzer] runs under any
// analysis driver, such as the "phalanx vet ./..." command, analysistest or
// multichecker.
//
// # Marking a package
//
// Only packages marked deterministic are checked. A package is marked when any
// of its non-test files carries the line comment
//
//	//phalanx:deterministic
//
// in a comment before its package clause: in the package doc comment or in
// any other comment above "package" (a file header, next to build
// constraints). The directive must start the comment line exactly as shown
// (no space after "//") and may be followed by a space and free text. One file
// of the build is enough to mark the whole package (a file excluded by build
// constraints is not seen); by convention the directive goes in doc.go. The
// directive elsewhere in a file (after the package clause) has no effect.
//
// Files whose names end in "_test.go" are neither checked nor considered for
// the marking: tests may drive a simulation with clocks and goroutines.
//
// # Rules
//
// Each finding names its rule in brackets at the end of the message, for
// example
//
//	detcheck: range over map: iteration order is random; use determinism.SortedKeys [maprange]
//
// The rules, by their short stable names:
//
//   - maprange: range over a map, including a named map type or a type
//     parameter whose core type is a map; references to maps.Keys,
//     maps.Values and maps.All, which iterate in the same random order,
//     except maps.Keys or maps.Values passed straight to slices.Sorted,
//     slices.SortedFunc or slices.SortedStableFunc.
//   - float: floating-point values and operations, that is float32, float64,
//     complex64 and complex128 (and type parameters whose type set holds one):
//     arithmetic and comparison operators, unary minus and plus, op-assign
//     (x += y), increment and decrement, conversions to or from a float type,
//     typed float constants and literals, calls returning a float, and the
//     floating-point functions of package math (math.Sqrt, math.Float64bits).
//     Only the outermost float expression of a nest is reported, so
//     "a*b + c" is one finding. Untyped constant arithmetic that ends up as an
//     integer, such as int(1.5 * 2), is exact and is not reported.
//   - clock: the time package's clock: time.Now, time.Since, time.Until,
//     time.Sleep, time.After, time.Tick, time.NewTimer, time.NewTicker,
//     time.AfterFunc. Using time.Duration as a type or constant is fine.
//   - rand: importing math/rand, math/rand/v2 or crypto/rand, and every use of
//     their functions, variables and methods, seeded or not.
//   - maphash: importing hash/maphash, and every use of it (its seed is random
//     per process).
//   - goroutine: go statements.
//   - select: select statements.
//   - chan: channel operations: send, receive (<-ch), range over a channel,
//     close, and make of a channel type.
//   - env: reading the environment or the file system: os.Getenv,
//     os.LookupEnv, os.Environ, os.ExpandEnv, os.ReadFile, os.Open,
//     os.OpenFile, os.ReadDir, os.Stat, os.Lstat, os.DirFS, os.Args,
//     os.Hostname, os.Getpid, os.Getppid, os.Getuid, os.Getwd,
//     os.Executable, os.UserHomeDir and their kin; io/ioutil.ReadFile,
//     io/ioutil.ReadDir, io/ioutil.ReadAll; importing syscall and every use of
//     it.
//   - unsafe: importing package unsafe.
//
// # Suppressing a finding
//
// A finding that is deterministic after all (a float used only for display, a
// map range whose result is order-independent) is suppressed by a line comment
//
//	//phalanx:allow RULE reason
//
// on the line of the finding or on the line just before it. RULE is one of the
// names above (several may be joined by commas, "float,maprange"); the reason
// is free text, ends at a further "//", and must not be empty. A comment
// suppresses the findings of its rules on its own line and on the next line,
// nothing else: all of them, if that line has several. A malformed allow
// comment (no reason, unknown rule) in a marked package is itself reported,
// under the rule name "allow", which cannot be suppressed.
//
// Analyzer keeps no state between runs and is safe for concurrent use.
package detcheck
