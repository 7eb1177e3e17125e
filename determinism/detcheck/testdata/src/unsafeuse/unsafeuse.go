//phalanx:deterministic

// Package unsafeuse exercises the unsafe rule.
package unsafeuse

import "unsafe" // want `import of unsafe: memory layout and pointer values are not portable`

func Size() uintptr {
	var x int64
	return unsafe.Sizeof(x)
}
