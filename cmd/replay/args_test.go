package main

import (
	"reflect"
	"testing"
)

func TestFlagsFirst(t *testing.T) {
	app := newApp()
	cases := []struct{ in, want []string }{
		{[]string{"replay", "ingest", "perf.data", "-o", "x.arrow"}, []string{"replay", "ingest", "-o", "x.arrow", "perf.data"}},
		{[]string{"replay", "ingest", "-o", "x.arrow", "perf.data"}, []string{"replay", "ingest", "-o", "x.arrow", "perf.data"}},
		{[]string{"replay", "ingest", "p", "--format=parquet", "--progress", "never"}, []string{"replay", "ingest", "--format=parquet", "--progress", "never", "p"}},
		{[]string{"replay", "info", "--json", "-i", "f"}, []string{"replay", "info", "--json", "-i", "f"}},
		{[]string{"replay", "ingest", "--", "-odd-name"}, []string{"replay", "ingest", "--", "-odd-name"}},
		{[]string{"replay", "nosuch", "a", "-o", "b"}, []string{"replay", "nosuch", "a", "-o", "b"}},
		{[]string{"replay"}, []string{"replay"}},
		{[]string{"replay", "--cpuprofile", "p", "ingest", "t", "-o", "x"}, []string{"replay", "--cpuprofile", "p", "ingest", "-o", "x", "t"}},
	}
	for _, tc := range cases {
		if got := flagsFirst(app, tc.in); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("flagsFirst(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
