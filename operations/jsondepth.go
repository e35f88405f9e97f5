package operations

// maxBodyDepth bounds how deep a submission body nests: far more than any
// provider's request needs, and far less than the store's JSON functions
// read (SQLite's stop at 1,000), so that a deep body is the caller's
// mistake, answered as such, not a failed write.
const maxBodyDepth = 64

// jsonDepth is how deep the arrays and objects of the JSON text b nest.
func jsonDepth(b []byte) int {
	depth, deepest, in, esc := 0, 0, false, false
	for _, c := range b {
		switch {
		case esc:
			esc = false
		case in && c == '\\':
			esc = true
		case c == '"':
			in = !in
		case in:
		case c == '[' || c == '{':
			depth++
			deepest = max(deepest, depth)
		case c == ']' || c == '}':
			depth--
		}
	}
	return deepest
}
