package ftrace

import (
	"bufio"
	"fmt"
	"io"
	"strings"
)

// MaxLineBytes bounds one text line; longer lines are an error.
const MaxLineBytes = 1 << 20

// Lines reads a text trace line by line, counting lines for error messages
// and refusing lines longer than MaxLineBytes (a binary file fed as text
// must not make one huge allocation). The perf script reader shares it.
type Lines struct {
	br   *bufio.Reader
	name string
	// N is the number of the line last returned (1-based).
	N int
}

// NewLines reads lines from rd; name is used in errors.
func NewLines(rd io.Reader, name string) *Lines {
	return &Lines{br: bufio.NewReaderSize(rd, 1<<16), name: name}
}

// Next returns the next line without its line ending; ok is false at EOF.
func (l *Lines) Next() (line string, ok bool, err error) {
	var buf []byte
	for {
		chunk, err := l.br.ReadSlice('\n')
		if len(buf)+len(chunk) > MaxLineBytes {
			return "", false, fmt.Errorf("%s: line %d: longer than %d bytes", l.name, l.N+1, MaxLineBytes)
		}
		buf = append(buf, chunk...)
		if err == bufio.ErrBufferFull {
			continue
		}
		if err == io.EOF {
			if len(buf) == 0 {
				return "", false, nil
			}
			err = nil
		}
		if err != nil {
			return "", false, fmt.Errorf("%s: line %d: %w", l.name, l.N+1, err)
		}
		l.N++
		return strings.TrimRight(string(buf), "\r\n"), true, nil
	}
}
