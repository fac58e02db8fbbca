//go:build !nemesis_knownfault

package postgres

// knownFault is off: the store as it ships (knownfault.go).
const knownFault = false
