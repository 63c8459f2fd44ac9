package watche2e

import (
	"os"
	"testing"

	"lab/internal/testenv"
)

// lab watch runs as lab's binary, which testenv.Main removes after.
func TestMain(m *testing.M) { os.Exit(testenv.Main(m)) }
