package reorder

import (
	"reflect"
	"testing"
)

func TestWindow(t *testing.T) {
	w := Window[string]{Limit: 2}
	var got []string
	var lates []bool
	pop := func() {
		v, late := w.Pop()
		got, lates = append(got, v), append(lates, late)
	}
	for _, x := range []struct {
		t int64
		v string
	}{{5, "a"}, {3, "b"}, {5, "c"}, {1, "d"}, {9, "e"}} {
		w.Push(x.t, x.v)
		if w.Full() {
			pop()
		}
	}
	for w.Len() > 0 {
		pop()
	}
	// b(3) leaves first; d(1) arrives after it: late. Ties (a, c at 5) keep
	// push order.
	if want := []string{"b", "d", "a", "c", "e"}; !reflect.DeepEqual(got, want) {
		t.Errorf("order %v, want %v", got, want)
	}
	if want := []bool{false, true, false, false, false}; !reflect.DeepEqual(lates, want) {
		t.Errorf("late %v, want %v", lates, want)
	}
	if w.Late() != 1 {
		t.Errorf("Late() = %d, want 1", w.Late())
	}
	var extra map[string]string
	NoteLate(&extra, w.Late())
	if extra["rows_out_of_time_order"] != "1" {
		t.Errorf("NoteLate wrote %v", extra)
	}
}
