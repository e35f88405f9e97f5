package contract

// nearest is the known key a misspelt name most likely meant: the closest
// by edit distance, when it is close enough to be a typo (at most two
// edits, and fewer than half the name's letters). "" when none is.
func nearest(name string, known []string) string {
	best, bestDist := "", 3
	for _, k := range known {
		d := editDistance(name, k)
		if d < bestDist && 2*d < len([]rune(name)) {
			best, bestDist = k, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b, in runes.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}
