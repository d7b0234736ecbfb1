package timeline

import (
	"github.com/apache/arrow-go/v18/arrow"
)

// The events table: ts, event, then the optional columns in Col order,
// then fields (JSON of the extra tracepoint fields) and callchain.
const (
	colTS        = "ts"
	colEvent     = "event"
	colFields    = "fields"
	colCallchain = "callchain"
)

var dictType = &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}

func arrowType(t colType) arrow.DataType {
	switch t {
	case tString:
		return dictType
	case tInt32:
		return arrow.PrimitiveTypes.Int32
	case tInt64:
		return arrow.PrimitiveTypes.Int64
	case tUint64:
		return arrow.PrimitiveTypes.Uint64
	case tUint8:
		return arrow.PrimitiveTypes.Uint8
	case tBool:
		return arrow.FixedWidthTypes.Boolean
	}
	panic("timeline: unknown column type")
}

// spillType is how a column is held in the temporary spill stream: string
// columns as dictionary indices, since the final dictionaries are known only
// when the whole trace has been read.
func spillType(t colType) arrow.DataType {
	if t == tString {
		return arrow.PrimitiveTypes.Int32
	}
	return arrowType(t)
}

func buildSchema(md *arrow.Metadata, typeOf func(colType) arrow.DataType, eventType arrow.DataType) *arrow.Schema {
	fs := make([]arrow.Field, 0, NumCols+4)
	fs = append(fs,
		arrow.Field{Name: colTS, Type: arrow.PrimitiveTypes.Int64},
		arrow.Field{Name: colEvent, Type: eventType},
	)
	for c := Col(0); c < NumCols; c++ {
		fs = append(fs, arrow.Field{Name: cols[c].name, Type: typeOf(cols[c].typ), Nullable: true})
	}
	fs = append(fs,
		arrow.Field{Name: colFields, Type: arrow.BinaryTypes.String, Nullable: true},
		arrow.Field{Name: colCallchain, Type: arrow.ListOf(arrow.PrimitiveTypes.Uint64), Nullable: true},
	)
	return arrow.NewSchema(fs, md)
}

// Schema returns the events table schema (without metadata), for documentation
// and for tools that build timelines by other means.
func Schema() *arrow.Schema { return buildSchema(nil, arrowType, dictType) }
