package whatif

import (
	"testing"
	"unsafe"
)

// Activation stays 72 bytes on a 64-bit machine (its field order packs
// it; a large trace holds millions): a field added must fit the padding
// or be paid for knowingly.
func TestActivationSize(t *testing.T) {
	if unsafe.Sizeof(uintptr(0)) != 8 {
		t.Skip("not a 64-bit machine")
	}
	if n := unsafe.Sizeof(Activation{}); n != 72 {
		t.Errorf("Activation is %d bytes, want 72", n)
	}
}
