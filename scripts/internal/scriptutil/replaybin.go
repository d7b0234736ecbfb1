package scriptutil

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// ReplayBinary is the replay binary a script runs: bin when given, else
// one built from ./cmd/replay (the script runs from the repository's
// root) into a temporary directory that cleanup removes.
func ReplayBinary(bin string) (path string, cleanup func(), err error) {
	if bin != "" {
		return bin, func() {}, nil
	}
	dir, err := os.MkdirTemp("", "replay-script")
	if err != nil {
		return "", nil, err
	}
	path = filepath.Join(dir, "replay")
	if out, err := exec.Command("go", "build", "-o", path, "./cmd/replay").CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return "", nil, fmt.Errorf("go build: %v\n%s", err, out)
	}
	return path, func() { os.RemoveAll(dir) }, nil
}
