//go:build !linux

package atomicfile

import (
	"errors"
	"os"
)

func openTmpfile(dir string) (*os.File, error) { return nil, errors.New("no O_TMPFILE") }

func linkTmpfile(f *os.File, name string) error { return errors.New("no O_TMPFILE") }
