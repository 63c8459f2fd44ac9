package main

import (
	"os"
	"testing"

	"lab/internal/testenv"
)

// The signal tests run lab's binary, which testenv.Main removes after.
func TestMain(m *testing.M) { os.Exit(testenv.Main(m)) }
