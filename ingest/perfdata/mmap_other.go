//go:build !unix

package perfdata

import "os"

func mapFile(f *os.File, size int64) []byte { return nil }
func unmapFile(b []byte)                    {}
func dropPages(b []byte)                    {}

var mapMinSize int64 = 1 << 62
