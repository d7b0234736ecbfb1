package perfetto

import (
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
)

// Hand decoding with protowire, not generated types: the tool needs about
// twenty messages out of the several hundred reachable from TracePacket;
// Perfetto's .proto files carry no go_package, so generating them would
// mean a local subset schema plus protoc in the build; and walking the
// wire format lets the reader keep only sub-slices of one packet buffer
// (no message trees) and check every length against its enclosing
// message, so hostile input fails with an offset instead of allocating.

// field is one decoded field of a message. For wire type 2, b is the
// payload (a sub-slice of the message); otherwise v holds the value.
type field struct {
	num protowire.Number
	typ protowire.Type
	v   uint64
	b   []byte
	at  int64 // file offset of the field's tag
}

// walk calls fn for every field of msg, which starts at file offset base.
// It stops at the first malformed field with an error naming its offset.
func walk(msg []byte, base int64, fn func(f *field) error) error {
	var f field
	for i := 0; i < len(msg); {
		f.at = base + int64(i)
		num, typ, n := protowire.ConsumeTag(msg[i:])
		if n < 0 {
			return fmt.Errorf("offset %d: bad field tag: %v", f.at, protowire.ParseError(n))
		}
		i += n
		f.num, f.typ, f.b, f.v = num, typ, nil, 0
		switch typ {
		case protowire.VarintType:
			f.v, n = protowire.ConsumeVarint(msg[i:])
		case protowire.Fixed32Type:
			var v uint32
			v, n = protowire.ConsumeFixed32(msg[i:])
			f.v = uint64(v)
		case protowire.Fixed64Type:
			f.v, n = protowire.ConsumeFixed64(msg[i:])
		case protowire.BytesType:
			f.b, n = protowire.ConsumeBytes(msg[i:])
		default:
			return fmt.Errorf("offset %d: field %d has wire type %d (groups are not used by Perfetto; corrupt data?)", f.at, num, typ)
		}
		if n < 0 {
			return fmt.Errorf("offset %d: field %d: %v", f.at, num, protowire.ParseError(n))
		}
		i += n
		if err := fn(&f); err != nil {
			return err
		}
	}
	return nil
}

// payloadOffset is the file offset of a wire-type-2 field's payload.
func (f *field) payloadOffset() int64 {
	return f.at + int64(protowire.SizeTag(f.num)) + int64(protowire.SizeVarint(uint64(len(f.b))))
}

// varints appends the values of a repeated varint field, packed (one
// wire-type-2 blob) or not (one field per value): proto2 allows both.
func varints[T ~int32 | ~int64 | ~uint32 | ~uint64](dst []T, f *field) ([]T, error) {
	switch f.typ {
	case protowire.VarintType:
		return append(dst, T(f.v)), nil
	case protowire.BytesType:
		b := f.b
		for len(b) > 0 {
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return dst, fmt.Errorf("offset %d: packed field %d: %v", f.payloadOffset()+int64(len(f.b)-len(b)), f.num, protowire.ParseError(n))
			}
			dst = append(dst, T(v))
			b = b[n:]
		}
		return dst, nil
	}
	return dst, fmt.Errorf("offset %d: field %d: wire type %d, want a varint", f.at, f.num, f.typ)
}

// i32 is an int32 field's value (negative int32s take 10 bytes on the wire).
func (f *field) i32() int64 { return int64(int32(f.v)) }

// str returns a string field (comms need not be UTF-8; kept as bytes).
func (f *field) str() string { return string(f.b) }
