package detcheck

import (
	"go/ast"
	"go/types"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/tools/go/types/typeutil"
)

// calleeOf returns the function or method a call statically calls, its
// generic origin if it is an instantiation, or nil for dynamic calls,
// builtins and conversions.
func calleeOf(info *types.Info, call *ast.CallExpr) *types.Func {
	fn, ok := typeutil.Callee(info, call).(*types.Func)
	if !ok {
		return nil
	}
	return fn.Origin()
}

// isPackageFunc reports whether fn is one of the named package-level
// functions of the package with the given path.
func isPackageFunc(fn *types.Func, path string, names ...string) bool {
	return fn != nil && fn.Pkg() != nil && fn.Pkg().Path() == path &&
		fn.Signature().Recv() == nil && slices.Contains(names, fn.Name())
}

// isMethod reports whether fn is the method name of the named type
// path.typeName (with a pointer receiver or not).
func isMethod(fn *types.Func, path, typeName, name string) bool {
	if fn == nil || fn.Pkg() == nil || fn.Pkg().Path() != path || fn.Name() != name {
		return false
	}
	recv := fn.Signature().Recv()
	if recv == nil {
		return false
	}
	t := recv.Type()
	if p, ok := t.(*types.Pointer); ok {
		t = p.Elem()
	}
	named, ok := types.Unalias(t).(*types.Named)
	return ok && named.Obj().Name() == typeName
}

// funcName names a function or method with its package name, as in
// "vec.Keys" or "vec.Vec.Rotated".
func funcName(fn *types.Func) string {
	if fn.Pkg() == nil {
		return fn.Name()
	}
	if recv := fn.Signature().Recv(); recv != nil {
		t := recv.Type()
		if p, ok := t.(*types.Pointer); ok {
			t = p.Elem()
		}
		if named, ok := types.Unalias(t).(*types.Named); ok {
			return fn.Pkg().Name() + "." + named.Obj().Name() + "." + fn.Name()
		}
	}
	return fn.Pkg().Name() + "." + fn.Name()
}

// objectName names a package-level object with its package name.
func objectName(obj types.Object) string {
	if fn, ok := obj.(*types.Func); ok {
		return funcName(fn)
	}
	return obj.Pkg().Name() + "." + obj.Name()
}

// isFloat reports whether t is a floating-point or complex type, typed or
// untyped, or a type parameter whose type set holds one.
func isFloat(t types.Type) bool {
	if t == nil {
		return false
	}
	if _, ok := types.Unalias(t).(*types.TypeParam); ok {
		return slices.ContainsFunc(typeTerms(t, 0), isFloatBasic)
	}
	return isFloatBasic(t.Underlying())
}

// isTypedFloat is isFloat without the untyped constant kinds.
func isTypedFloat(t types.Type) bool {
	if t == nil {
		return false
	}
	if b, ok := t.Underlying().(*types.Basic); ok && b.Info()&types.IsUntyped != 0 {
		return false
	}
	return isFloat(t)
}

func isFloatBasic(t types.Type) bool {
	b, ok := t.(*types.Basic)
	return ok && b.Info()&(types.IsFloat|types.IsComplex) != 0
}

// isInteger reports whether t's underlying type is an integer type, or a
// type parameter all of whose terms are.
func isInteger(t types.Type) bool {
	return allTerms(t, func(u types.Type) bool {
		b, ok := u.(*types.Basic)
		return ok && b.Info()&types.IsInteger != 0
	})
}

// hasFloatState reports whether t (or what it points to) is a float type or
// a struct or array with a float field or element, directly.
func hasFloatState(t types.Type) bool {
	if p, ok := t.Underlying().(*types.Pointer); ok {
		t = p.Elem()
	}
	switch u := t.Underlying().(type) {
	case *types.Basic:
		return isFloatBasic(u)
	case *types.Struct:
		for f := range u.Fields() {
			if isFloat(f.Type()) {
				return true
			}
		}
	case *types.Array:
		return isFloat(u.Elem())
	}
	return false
}

func isMap(t types.Type) bool {
	_, ok := t.(*types.Map)
	return ok
}

func isChan(t types.Type) bool {
	_, ok := t.(*types.Chan)
	return ok
}

// isReference reports whether t is a pointer, slice or map: a value
// through which stores reach memory the holder does not own.
func isReference(t types.Type) bool {
	if t == nil {
		return false
	}
	switch t.Underlying().(type) {
	case *types.Pointer, *types.Slice, *types.Map:
		return true
	}
	return false
}

// allTerms reports whether the underlying type of t satisfies pred or, for a
// type parameter, whether every type in its type set does.
func allTerms(t types.Type, pred func(types.Type) bool) bool {
	if t == nil {
		return false
	}
	if _, ok := types.Unalias(t).(*types.TypeParam); !ok {
		return pred(t.Underlying())
	}
	terms := typeTerms(t, 0)
	return len(terms) > 0 && !slices.ContainsFunc(terms, func(u types.Type) bool { return !pred(u) })
}

// typeTerms returns the underlying types named by the type set of a type
// parameter or constraint interface t, or t's underlying type if t is neither.
// Embedded interfaces are merged as if unioned: an over-approximation that is
// exact for the usual constraints (a union of ~T terms).
func typeTerms(t types.Type, depth int) []types.Type {
	iface, ok := t.Underlying().(*types.Interface)
	if !ok {
		return []types.Type{t.Underlying()}
	}
	if depth > 32 {
		return nil
	}
	var terms []types.Type
	for i := range iface.NumEmbeddeds() {
		switch embedded := iface.EmbeddedType(i).(type) {
		case *types.Union:
			for j := range embedded.Len() {
				terms = append(terms, typeTerms(embedded.Term(j).Type(), depth+1)...)
			}
		default:
			terms = append(terms, typeTerms(embedded, depth+1)...)
		}
	}
	return terms
}

// rootIdent returns the identifier an lvalue or operand expression starts
// from (x in x.f[i].g), or nil.
func rootIdent(e ast.Expr) *ast.Ident {
	for {
		switch x := ast.Unparen(e).(type) {
		case *ast.Ident:
			return x
		case *ast.SelectorExpr:
			e = x.X
		case *ast.IndexExpr:
			e = x.X
		case *ast.IndexListExpr:
			e = x.X
		case *ast.StarExpr:
			e = x.X
		case *ast.SliceExpr:
			e = x.X
		default:
			return nil
		}
	}
}

// shortPos formats a position as "dir/file.go:line".
func shortPos(filename string, line int) string {
	parts := strings.Split(filepath.ToSlash(filename), "/")
	if len(parts) > 2 {
		parts = parts[len(parts)-2:]
	}
	return strings.Join(parts, "/") + ":" + strconv.Itoa(line)
}
