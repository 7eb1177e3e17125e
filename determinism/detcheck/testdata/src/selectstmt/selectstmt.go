//phalanx:deterministic

// Package selectstmt exercises the select rule.
package selectstmt

func Wait(a, b chan int) int {
	select { // want `select statement: the ready case is chosen at random \[select\]`
	case v := <-a: // want `channel receive`
		return v
	case v := <-b: // want `channel receive`
		return v
	default:
		return 0
	}
}

func Block() {
	select {} // want `select statement`
}
