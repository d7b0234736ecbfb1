// Package report writes `replay report`: one self-contained HTML page with
// the plots people look at when they review a schedule — the trace summary
// and domain tree, wakeup-latency CDFs of the observed and simulated
// schedules, a zoomable per-CPU timeline with the idle-while-runnable gaps
// in red, per-level bars, and the fidelity and delta tables.
//
// Nothing is measured here: the observed schedule goes through the same
// analysis as `replay latency` (analysis.Analyzer, fed while whatif.Extract
// reads the trace, so the trace is read once) and every replay through
// whatif.Replay with the same analysis on its output. The package only
// keeps the run slices and run-queue waits it needs to draw (Schedule),
// and renders. WriteCDFPlot writes the CDF chart alone for --plot.
package report
