// Package strictjson decodes what callers send strictly: unknown keys,
// values of the wrong type and trailing data are invalid-argument errors
// whose message names the field's path without echoing the caller's data.
package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"time"

	"github.com/chatmemory/backend/kernel/errs"
)

// Decode decodes data into v strictly: unknown keys, values of the
// wrong type and trailing data are invalid-argument errors whose message
// names the field's path ("memory.budgetTokens: …") without echoing the
// caller's data. A type whose UnmarshalJSON calls Decode itself is
// decoded strictly wherever it is nested; the message is made once, by the
// outermost call, from the whole document.
func Decode(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var inner *decodeError
		if errors.As(err, &inner) && inner.nested {
			// An UnmarshalJSON of ours failed inside this document: its
			// path is relative to itself, so find the problem again from here.
			err = inner.cause
		}
		return &errs.Error{Code: errs.EINVALID, Message: describe(data, reflect.TypeOf(v), err),
			Err: &decodeError{cause: err, nested: true}}
	}
	if dec.More() {
		return errs.Errorf(errs.EINVALID, "malformed JSON: trailing data after the object")
	}
	return nil
}

// decodeError marks an error of Decode, so that an enclosing call
// describes it anew instead of prefixing the inner message again.
type decodeError struct {
	cause  error
	nested bool
}

func (e *decodeError) Error() string { return e.cause.Error() }
func (e *decodeError) Unwrap() error { return e.cause }

// describe says what is wrong with data as a value of type t, naming the
// path of the first unknown key or value of the wrong kind.
func describe(data []byte, t reflect.Type, err error) string {
	var syn *json.SyntaxError
	if errors.As(err, &syn) || !json.Valid(data) {
		return "malformed JSON: syntax error"
	}
	if path, problem, ok := findProblem(data, t, ""); ok {
		if path == "" {
			return "the body " + problem
		}
		return path + ": " + problem
	}
	return "malformed JSON: cannot decode"
}

var (
	timeType      = reflect.TypeOf(time.Time{})
	rawType       = reflect.TypeOf(json.RawMessage(nil))
	unmarshalType = reflect.TypeOf((*json.Unmarshaler)(nil)).Elem()
)

// findProblem walks raw (valid JSON) against t as encoding/json would and
// returns the path of the first value it would refuse, and why.
func findProblem(raw []byte, t reflect.Type, path string) (string, string, bool) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	raw = bytes.TrimSpace(raw)
	if string(raw) == "null" || t == rawType || t.Kind() == reflect.Interface {
		return "", "", false
	}
	if what := mismatch(raw, t); what != "" {
		return path, "must be " + what, true
	}
	if decodesItself(t) {
		return "", "", false // nothing of ours inside
	}
	switch t.Kind() {
	case reflect.Slice, reflect.Array:
		var items []json.RawMessage
		json.Unmarshal(raw, &items) // mismatch found it a list
		for i, item := range items {
			if p, why, ok := findProblem(item, t.Elem(), fmt.Sprintf("%s[%d]", path, i)); ok {
				return p, why, true
			}
		}
	case reflect.Map, reflect.Struct:
		var obj map[string]json.RawMessage
		json.Unmarshal(raw, &obj) // mismatch found it an object
		return findInObject(obj, t, path)
	}
	return "", "", false
}

// findInObject returns the path of the first key of obj (in key order) a
// map or struct of type t refuses, or whose value it refuses, and why.
func findInObject(obj map[string]json.RawMessage, t reflect.Type, path string) (string, string, bool) {
	var fields map[string]reflect.Type
	if t.Kind() == reflect.Struct {
		fields = jsonFields(t)
	}
	for _, k := range sortedKeys(obj) {
		ft := t
		if t.Kind() == reflect.Map {
			ft = t.Elem()
		} else if ft = fields[strings.ToLower(k)]; ft == nil {
			return join(path, k), "unknown field", true
		}
		if p, why, ok := findProblem(obj[k], ft, join(path, k)); ok {
			return p, why, true
		}
	}
	return "", "", false
}

// mismatch is what a value of type t must be, when raw (valid JSON) is
// not one; "" when it is, as far as raw itself goes (the items of a list
// or an object are looked at on their own).
func mismatch(raw []byte, t reflect.Type) string {
	switch {
	case t == timeType:
		return unless(raw[0] == '"', "a time in RFC 3339 format")
	case decodesItself(t):
		return ""
	}
	switch t.Kind() {
	case reflect.String:
		return unless(raw[0] == '"', "a string")
	case reflect.Bool:
		return unless(raw[0] == 't' || raw[0] == 'f', "true or false")
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if bytes.ContainsAny(raw, ".eE") || !isNumber(raw) {
			return "a whole number"
		}
		return unless(json.Unmarshal(raw, reflect.New(t).Interface()) == nil, "a whole number in range")
	case reflect.Float32, reflect.Float64:
		return unless(isNumber(raw), "a number")
	case reflect.Slice, reflect.Array:
		var items []json.RawMessage
		return unless(raw[0] == '[' && json.Unmarshal(raw, &items) == nil, "a list")
	case reflect.Map, reflect.Struct:
		var obj map[string]json.RawMessage
		return unless(raw[0] == '{' && json.Unmarshal(raw, &obj) == nil, "an object")
	}
	return ""
}

// decodesItself tells whether t (not a struct, whose fields are ours)
// decodes itself, or is a time.
func decodesItself(t reflect.Type) bool {
	return t == timeType || (t.Kind() != reflect.Struct && reflect.PointerTo(t).Implements(unmarshalType))
}

// isNumber tells whether raw, valid JSON, is a number.
func isNumber(raw []byte) bool {
	return raw[0] == '-' || (raw[0] >= '0' && raw[0] <= '9')
}

// unless is "" when ok, else what.
func unless(ok bool, what string) string {
	if ok {
		return ""
	}
	return what
}

// jsonFields maps the lower-cased JSON names of t's fields (embedded
// structs flattened, as encoding/json does) to their types.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case name == "-":
			continue
		case f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct:
			for k, v := range jsonFields(f.Type) {
				out[k] = v
			}
			continue
		case !f.IsExported():
			continue
		case name == "":
			name = f.Name
		}
		out[strings.ToLower(name)] = f.Type
	}
	return out
}

func join(path, key string) string {
	if len(key) > 64 { // a message names a field; it does not replay the body
		key = strings.ToValidUTF8(key[:64], "") + "…"
	}
	if path == "" {
		return key
	}
	return path + "." + key
}

func sortedKeys(m map[string]json.RawMessage) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
