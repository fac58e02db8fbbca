package approvals

// Closest is the candidate nearest to name by edit distance, when it is near enough to be what
// was meant (at most half the longer name's length, and at most 3 edits), or the one name
// is the start of (3 characters at least: "exec" → execute); "" otherwise. It is how a refused
// answer says what it probably meant ({"approve": …} → approved).
func Closest(name string, candidates []string) string {
	if len(name) >= 3 {
		for _, c := range candidates {
			if len(c) > len(name) && c[:len(name)] == name {
				return c
			}
		}
	}
	best, bestDistance := "", -1
	for _, c := range candidates {
		d := distance(name, c)
		if bestDistance < 0 || d < bestDistance {
			best, bestDistance = c, d
		}
	}
	limit := min(3, max(len(name), len(best))/2)
	if bestDistance < 0 || bestDistance > limit || bestDistance == 0 && name == best {
		return ""
	}
	return best
}

// distance is the Levenshtein distance between a and b, by bytes (names are ASCII).
func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
