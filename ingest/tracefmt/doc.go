// Package tracefmt decodes kernel tracepoint format descriptions and the
// records they describe, independently of the container format.
//
// The same pieces appear in several trace files: perf.data carries them in
// its HEADER_TRACING_DATA blob, trace-cmd trace.dat (version 6) starts with
// the very same layout, and trace.dat version 7 stores the parts in separate
// sections. The readers of those containers hand the bytes to this package
// and get back [Format] values whose [Field] accessors decode raw records.
//
// Field offsets and sizes always come from the format text shipped in the
// trace, never from hard-coded layouts: they differ between kernels (32- and
// 64-bit, extra common fields, fields added or turned into __data_loc).
//
// The prev_state of sched_switch is rendered by [StateDecoder], built either
// from the event's own print fmt (preferred, exact) or from the kernel
// release when no format is available.
package tracefmt
