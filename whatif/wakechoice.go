package whatif

import (
	"fmt"

	"github.com/schedreplay/replay/analysis"
)

// choiceCells are --validate's two rows of the wakeup path's choices for
// one schedule (analysis.WakeChoices): "kept/pulled/other (share kept)"
// and "stayed/moved (share stayed)"; "-" for a schedule without them.
func choiceCells(p *analysis.WakeChoices) (remote, local string) {
	if p == nil {
		return "-", "-"
	}
	return fmt.Sprintf("%d/%d/%d%s", p.Kept, p.Pulled, p.Elsewhere, pctOf(p.Kept, p.Kept+p.Pulled+p.Elsewhere)),
		fmt.Sprintf("%d/%d%s", p.Stayed, p.Moved, pctOf(p.Stayed, p.Stayed+p.Moved))
}

// pctOf is " (N%)" of a part of a whole, empty for an empty whole.
func pctOf(part, whole int64) string {
	if whole == 0 {
		return ""
	}
	return fmt.Sprintf(" (%.0f%%)", 100*float64(part)/float64(whole))
}
