package analysis

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"strings"
	"testing"
)

// Task names are attacker-chosen data: the table must not carry terminal
// control sequences, and CSV and JSON must round-trip the name exactly.
func TestHostileCommOutput(t *testing.T) {
	evil := "\x1b]0;owned\x07\x1b[2J<script>,\"x\"\n"
	rep := &Report{Tasks: []TaskStats{{TID: 7, PID: 7, Comm: evil, Merged: 1, Switches: 1}}}
	var tab bytes.Buffer
	if err := rep.WriteTable(&tab, ByTask); err != nil {
		t.Fatal(err)
	}
	if bytes.ContainsAny(tab.Bytes(), "\x1b\x07") {
		t.Errorf("table output carries control characters:\n%q", tab.String())
	}
	if !strings.Contains(tab.String(), `\x1b]0;owned`) {
		t.Errorf("table output does not show the escaped name:\n%s", tab.String())
	}
	var js bytes.Buffer
	if err := rep.WriteJSON(&js, ByTask); err != nil {
		t.Fatal(err)
	}
	var out struct {
		Tasks []struct {
			Comm string `json:"comm"`
		} `json:"tasks"`
	}
	if err := json.Unmarshal(js.Bytes(), &out); err != nil || len(out.Tasks) != 1 || out.Tasks[0].Comm != evil {
		t.Errorf("JSON does not round-trip the name: %v %+v", err, out)
	}
	var cs bytes.Buffer
	if err := rep.WriteCSV(&cs, ByTask); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&cs).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, r := range recs {
		for _, f := range r {
			found = found || f == evil
		}
	}
	if !found {
		t.Errorf("CSV does not round-trip the name: %q", recs)
	}
}
