//go:build !race

package main

// raceEnabled is true when the test runs with -race.
const raceEnabled = false
