package detcheck

import (
	"fmt"
	"go/ast"
	"go/constant"
	"go/types"
	"strings"
)

// This file knows the standard library functions and variables that bring
// non-determinism in: the clock, random numbers, per-process hash seeds,
// the runtime environment, pointer values and map iteration.

// clockFuncs are the functions of package time that read or wait on the clock.
var clockFuncs = map[string]bool{
	"Now": true, "Since": true, "Until": true, "Sleep": true, "After": true,
	"Tick": true, "NewTimer": true, "NewTicker": true, "AfterFunc": true,
}

// randPackages are the packages of random numbers not derived from a session
// seed.
var randPackages = map[string]bool{
	"math/rand": true, "math/rand/v2": true, "crypto/rand": true,
}

// osReads are the package-level functions and variables of package os that
// read the environment, the process identity or the file system.
var osReads = map[string]bool{
	"Getenv": true, "LookupEnv": true, "Environ": true, "ExpandEnv": true,
	"ReadFile": true, "Open": true, "OpenFile": true, "OpenInRoot": true, "OpenRoot": true,
	"ReadDir": true, "Stat": true, "Lstat": true, "Readlink": true, "DirFS": true,
	"Hostname": true, "Getpid": true, "Getppid": true, "Getuid": true, "Geteuid": true,
	"Getgid": true, "Getegid": true, "Getgroups": true, "Getpagesize": true,
	"Getwd": true, "Executable": true, "TempDir": true,
	"UserHomeDir": true, "UserCacheDir": true, "UserConfigDir": true,
	"Args": true, "Stdin": true,
}

// runtimeEnv are the functions and constants of package runtime that
// describe the machine or the process.
var runtimeEnv = map[string]bool{
	"NumCPU": true, "GOMAXPROCS": true, "NumGoroutine": true, "Version": true,
	"GOOS": true, "GOARCH": true, "NumCgoCall": true, "Caller": true, "Callers": true,
	"Stack": true, "ReadMemStats": true,
}

// ioutilReads are the reading functions of package io/ioutil.
var ioutilReads = map[string]bool{"ReadFile": true, "ReadDir": true, "ReadAll": true}

// mapIterators are the functions of package maps that iterate a map in its
// random order.
var mapIterators = map[string]bool{"Keys": true, "Values": true, "All": true}

// transcendental are the functions of package math whose results are not
// specified to the last bit: their implementations differ between
// architectures (assembly on some) and Go versions.
var transcendental = map[string]bool{
	"Sin": true, "Cos": true, "Tan": true, "Sincos": true, "Asin": true, "Acos": true,
	"Atan": true, "Atan2": true, "Sinh": true, "Cosh": true, "Tanh": true, "Asinh": true,
	"Acosh": true, "Atanh": true, "Exp": true, "Exp2": true, "Expm1": true, "Log": true,
	"Log2": true, "Log10": true, "Log1p": true, "Pow": true, "Pow10": true, "Hypot": true,
	"Cbrt": true, "Erf": true, "Erfc": true, "Gamma": true, "Lgamma": true, "J0": true,
	"J1": true, "Jn": true, "Y0": true, "Y1": true, "Yn": true, "Erfinv": true, "Erfcinv": true,
}

// source classifies a use of a standard library object: the rule it
// breaks and a message, or "" if it is harmless. Whether a maps.Keys is
// sorted at once is for the caller to tell.
func source(obj types.Object) (rule, msg string) {
	if obj == nil || obj.Pkg() == nil {
		return "", ""
	}
	path := obj.Pkg().Path()
	fn, isFunc := obj.(*types.Func)
	_, isVar := obj.(*types.Var)
	_, isConst := obj.(*types.Const)
	packageLevel := obj.Pkg().Scope().Lookup(obj.Name()) == obj
	switch {
	case path == "time" && isFunc && packageLevel && clockFuncs[obj.Name()]:
		return RuleClock, fmt.Sprintf("time.%s reads the real clock; time must enter the simulation as frames", obj.Name())
	case randPackages[path] && (isFunc || isVar && packageLevel):
		return RuleRand, fmt.Sprintf("%s (%s): random numbers not derived from the session seed; use package rng", objectName(obj), path)
	case path == "hash/maphash" && (isFunc || isVar && packageLevel):
		return RuleMaphash, fmt.Sprintf("%s: hash/maphash is seeded at random per process; use the determinism state hasher", objectName(obj))
	case path == "syscall" && (isFunc || isVar && packageLevel):
		return RuleEnv, fmt.Sprintf("%s: system calls read state that differs between peers", objectName(obj))
	case path == "os" && (isFunc || isVar) && packageLevel && osReads[obj.Name()]:
		return RuleEnv, fmt.Sprintf("os.%s reads the environment or file system, which differs between peers", obj.Name())
	case path == "runtime" && (isFunc || isConst) && packageLevel && runtimeEnv[obj.Name()]:
		return RuleEnv, fmt.Sprintf("runtime.%s describes the machine or process, which differs between peers", obj.Name())
	case path == "io/ioutil" && isFunc && packageLevel && ioutilReads[obj.Name()]:
		return RuleEnv, fmt.Sprintf("ioutil.%s reads outside the simulation, which differs between peers", obj.Name())
	case path == "maps" && isFunc && packageLevel && mapIterators[obj.Name()]:
		return RuleMapRange, fmt.Sprintf("maps.%s iterates a map in random order; use determinism.SortedKeys", obj.Name())
	case isMethod(fn, "sync", "Map", "Range"):
		return RuleMapRange, "sync.Map.Range iterates in random order; keep the state in a plain map and use determinism.SortedKeys"
	case isMethod(fn, "reflect", "Value", "MapRange") || isMethod(fn, "reflect", "Value", "MapKeys") || isMethod(fn, "reflect", "Value", "Seq") || isMethod(fn, "reflect", "Value", "Seq2"):
		return RuleMapRange, fmt.Sprintf("reflect.Value.%s iterates a map in random order", fn.Name())
	case isMethod(fn, "reflect", "Value", "Pointer") || isMethod(fn, "reflect", "Value", "UnsafePointer") || isMethod(fn, "reflect", "Value", "UnsafeAddr"):
		return RulePointer, fmt.Sprintf("reflect.Value.%s is a memory address, which differs between peers", fn.Name())
	}
	return "", ""
}

// isTranscendental reports whether fn is a function of package math whose
// result may differ between architectures.
func isTranscendental(fn *types.Func) bool {
	return fn != nil && fn.Pkg() != nil && fn.Pkg().Path() == "math" && fn.Signature().Recv() == nil && transcendental[fn.Name()]
}

// printfFuncs are the functions of package fmt whose first (or, for the
// F and Append kinds, second) argument is a format.
var printfFuncs = map[string]int{
	"Printf": 0, "Sprintf": 0, "Errorf": 0, "Fprintf": 1, "Appendf": 1,
}

// pointerUse reports a call that turns a pointer into a number or text:
// a %p verb in a fmt format, or a conversion of an unsafe.Pointer to
// uintptr. It returns "" otherwise.
func pointerUse(info *types.Info, call *ast.CallExpr) string {
	if tv, ok := info.Types[call.Fun]; ok && tv.IsType() {
		if len(call.Args) == 1 {
			if b, ok := tv.Type.Underlying().(*types.Basic); ok && b.Kind() == types.Uintptr {
				if from, ok := info.TypeOf(call.Args[0]).Underlying().(*types.Basic); ok && from.Kind() == types.UnsafePointer {
					return "uintptr of a pointer is a memory address, which differs between peers"
				}
			}
		}
		return ""
	}
	fn := calleeOf(info, call)
	if fn == nil || fn.Pkg() == nil || fn.Pkg().Path() != "fmt" || fn.Signature().Recv() != nil {
		return ""
	}
	i, ok := printfFuncs[fn.Name()]
	if !ok || len(call.Args) <= i {
		return ""
	}
	tv := info.Types[call.Args[i]]
	if tv.Value == nil || tv.Value.Kind() != constant.String {
		return ""
	}
	if hasPointerVerb(constant.StringVal(tv.Value)) {
		return fmt.Sprintf("fmt.%s with %%p formats a memory address, which differs between peers", fn.Name())
	}
	return ""
}

// hasPointerVerb reports whether a fmt format uses the %p verb.
func hasPointerVerb(format string) bool {
	for i := 0; i < len(format); i++ {
		if format[i] != '%' {
			continue
		}
		j := i + 1
		for j < len(format) && strings.IndexByte("+-# 0123456789.*[]", format[j]) >= 0 {
			j++
		}
		if j < len(format) && format[j] == 'p' {
			return true
		}
		i = j
	}
	return false
}
