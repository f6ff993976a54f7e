package firestoredb

import (
	"reflect"
	"strings"
	"time"

	"cloud.google.com/go/firestore"
)

// docSize is the storage size of a document at ref holding v (a struct
// with firestore tags, or a map), by Firestore's storage-size rules: the
// document name (each path segment's bytes plus one, plus 16), each field
// name's bytes plus one, each value (a string's bytes plus one, 8 for a
// number or a time, 1 for a bool or null, an array's values, a map's
// fields), plus 32.
func docSize(ref *firestore.DocumentRef, v any) int {
	const root = "/documents/"
	n := 16 + 32
	path := ref.Path[strings.Index(ref.Path, root)+len(root):]
	for _, seg := range strings.Split(path, "/") {
		n += len(seg) + 1
	}
	return n + fieldsSize(reflect.ValueOf(v))
}

var timeType = reflect.TypeOf(time.Time{})

// fieldsSize is the size of the fields of a struct or map value.
func fieldsSize(v reflect.Value) int {
	for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
		if v.IsNil() {
			return 0
		}
		v = v.Elem()
	}
	n := 0
	switch v.Kind() {
	case reflect.Map:
		for _, k := range v.MapKeys() {
			n += len(k.String()) + 1 + valueSize(v.MapIndex(k))
		}
	case reflect.Struct:
		t := v.Type()
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			if !f.IsExported() && !f.Anonymous { // embedded structs lend their fields
				continue
			}
			name, opts, _ := strings.Cut(f.Tag.Get("firestore"), ",")
			if name == "-" {
				continue
			}
			fv := v.Field(i)
			if f.Anonymous && name == "" {
				n += fieldsSize(fv)
				continue
			}
			if name == "" {
				name = f.Name
			}
			if strings.Contains(opts, "omitempty") && fv.IsZero() {
				continue
			}
			n += len(name) + 1 + valueSize(fv)
		}
	}
	return n
}

// valueSize is the storage size of one value.
func valueSize(v reflect.Value) int {
	if v.Type() == timeType {
		return 8
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return 1
		}
		return valueSize(v.Elem())
	case reflect.String:
		return v.Len() + 1
	case reflect.Bool:
		return 1
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Float32, reflect.Float64:
		return 8
	case reflect.Slice, reflect.Array:
		if v.Kind() == reflect.Slice && v.IsNil() {
			return 1
		}
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return v.Len()
		}
		n := 0
		for i := 0; i < v.Len(); i++ {
			n += valueSize(v.Index(i))
		}
		return n
	case reflect.Map, reflect.Struct:
		if v.Kind() == reflect.Map && v.IsNil() {
			return 1
		}
		return fieldsSize(v)
	}
	return 8
}
