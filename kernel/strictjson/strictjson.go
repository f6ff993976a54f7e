// Package strictjson decodes what callers send strictly: unknown keys,
// keys that name a field in another case, values of the wrong type, text
// holding control characters and trailing data are invalid-argument errors
// whose message names the field's path without echoing the caller's data.
package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/chatmemory/backend/kernel/errs"
)

// Decode decodes data into v strictly: unknown keys (a field's name in
// another case too: names are exact), values of the wrong type, strings
// holding a control character other than tab, CR and LF, and trailing
// data are invalid-argument errors whose message names the field's path
// ("memory.budgetTokens: …") without echoing the caller's data. A type
// whose UnmarshalJSON calls Decode itself is decoded strictly wherever it
// is nested; the message is made once, by the outermost call, from the
// whole document.
func Decode(data []byte, v any) error { return decode(data, v, false) }

// DecodeOpen decodes data into v as Decode does, but passes over keys v
// has no field for: for a document of another's protocol, of which v
// reads a part. A key naming one of v's fields in another case is still
// refused, and so is a control character anywhere in the document.
func DecodeOpen(data []byte, v any) error { return decode(data, v, true) }

func decode(data []byte, v any, open bool) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	if !open {
		dec.DisallowUnknownFields()
	}
	err := dec.Decode(v)
	if err == nil && dec.More() {
		return errs.Errorf(errs.EINVALID, "malformed JSON: trailing data after the object")
	}
	if err == nil {
		// encoding/json matches names in any case and takes any text:
		// look for what it let through, when anything may have been.
		if clean(data, reflect.TypeOf(v)) {
			return nil
		}
		path, problem, found := findProblem(data, reflect.TypeOf(v), "", open)
		if !found {
			return nil
		}
		err = errors.New(problem)
		return &errs.Error{Code: errs.EINVALID, Message: message(path, problem), Err: &decodeError{cause: err, nested: true}}
	}
	var inner *decodeError
	if errors.As(err, &inner) && inner.nested {
		// An UnmarshalJSON of ours failed inside this document: its
		// path is relative to itself, so find the problem again from here.
		err = inner.cause
	}
	return &errs.Error{Code: errs.EINVALID, Message: describe(data, reflect.TypeOf(v), err, open),
		Err: &decodeError{cause: err, nested: true}}
}

// clean tells whether data, which decoded into a t, holds neither an
// escaped control character nor a key spelling, in another case, the
// name of a field of t or of a type within it: then findProblem would
// find nothing, and the walk it makes (decoding each object again) is
// spared. A key that might be such a one (a name two fields spell
// differently, a key that is not ASCII) is not clean.
func clean(data []byte, t reflect.Type) bool {
	if bytes.Contains(data, []byte(`\u00`)) || bytes.Contains(data, []byte(`\b`)) || bytes.Contains(data, []byte(`\f`)) {
		return false
	}
	names := namesIn(t)
	dec := json.NewDecoder(bytes.NewReader(data))
	var objects []bool // for each object or list open, whether an object
	key := false       // whether the next string is a key
	for {
		tok, err := dec.Token()
		if err != nil {
			return err == io.EOF
		}
		switch tok := tok.(type) {
		case json.Delim:
			if tok == '{' || tok == '[' {
				objects, key = append(objects, tok == '{'), tok == '{'
				continue
			}
			objects = objects[:len(objects)-1]
		case string:
			if key {
				if !names.fine(tok) {
					return false
				}
				key = false
				continue
			}
		}
		key = len(objects) > 0 && objects[len(objects)-1] // a value ended
	}
}

// fieldNames are the JSON names of the fields of a type and of the types
// within it, by their lower-case spelling.
type fieldNames map[string][]string

var namesOfType sync.Map // reflect.Type → fieldNames

// namesIn are the field names of t and of every type within it, made
// once a type.
func namesIn(t reflect.Type) fieldNames {
	if n, ok := namesOfType.Load(t); ok {
		return n.(fieldNames)
	}
	n := fieldNames{}
	seen := map[reflect.Type]bool{}
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array || t.Kind() == reflect.Map {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct || seen[t] {
			return
		}
		seen[t] = true
		for name, ft := range jsonFields(t) {
			low := strings.ToLower(name)
			if !slices.Contains(n[low], name) {
				n[low] = append(n[low], name)
			}
			walk(ft)
		}
	}
	walk(t)
	namesOfType.Store(t, n)
	return n
}

// fine tells whether key cannot be a field's name in another case: it
// is ASCII and no field is spelled like it but for case, unless it is
// that field's one spelling.
func (n fieldNames) fine(key string) bool {
	for i := 0; i < len(key); i++ {
		if key[i] >= utf8.RuneSelf {
			return false
		}
	}
	spellings := n[strings.ToLower(key)]
	return len(spellings) == 0 || (len(spellings) == 1 && spellings[0] == key)
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
func describe(data []byte, t reflect.Type, err error, open bool) string {
	var syn *json.SyntaxError
	if errors.As(err, &syn) || !json.Valid(data) {
		return "malformed JSON: syntax error"
	}
	if path, problem, ok := findProblem(data, t, "", open); ok {
		return message(path, problem)
	}
	return "malformed JSON: cannot decode"
}

// message says problem of the value at path.
func message(path, problem string) string {
	if path == "" {
		return "the body " + problem
	}
	return path + ": " + problem
}

var (
	timeType      = reflect.TypeOf(time.Time{})
	rawType       = reflect.TypeOf(json.RawMessage(nil))
	unmarshalType = reflect.TypeOf((*json.Unmarshaler)(nil)).Elem()
)

// findProblem walks raw (valid JSON) against t as encoding/json would and
// returns the path of the first value it would refuse, or that holds a
// control character, and why; open, it passes over keys t has no field
// for (looking into their values for control characters only).
func findProblem(raw []byte, t reflect.Type, path string, open bool) (string, string, bool) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	raw = bytes.TrimSpace(raw)
	if string(raw) == "null" {
		return "", "", false
	}
	if t == rawType || t.Kind() == reflect.Interface {
		return findControl(raw, path)
	}
	if what := mismatch(raw, t); what != "" {
		return path, "must be " + what, true
	}
	switch {
	case decodesItself(t): // nothing of ours inside
		return findControl(raw, path)
	case t.Kind() == reflect.String:
		return findControl(raw, path)
	case t.Kind() == reflect.Slice || t.Kind() == reflect.Array:
		var items []json.RawMessage
		json.Unmarshal(raw, &items) // mismatch found it a list
		for i, item := range items {
			if p, why, ok := findProblem(item, t.Elem(), fmt.Sprintf("%s[%d]", path, i), open); ok {
				return p, why, true
			}
		}
	case t.Kind() == reflect.Map || t.Kind() == reflect.Struct:
		var obj map[string]json.RawMessage
		json.Unmarshal(raw, &obj) // mismatch found it an object
		return findInObject(obj, t, path, open)
	}
	return "", "", false
}

// findInObject returns the path of the first key of obj (in key order) a
// map or struct of type t refuses, or whose value it refuses, and why.
func findInObject(obj map[string]json.RawMessage, t reflect.Type, path string, open bool) (string, string, bool) {
	var fields map[string]reflect.Type
	if t.Kind() == reflect.Struct {
		fields = jsonFields(t)
	}
	for _, k := range sortedKeys(obj) {
		if hasControl(k) {
			return path, "holds a key with a control character (only tab, CR and LF are allowed)", true
		}
		ft := t
		if t.Kind() == reflect.Map {
			ft = t.Elem()
		} else if ft = fields[k]; ft == nil {
			if name := otherCase(fields, k); name != "" {
				return join(path, k), fmt.Sprintf("unknown field (names are exact: %q)", name), true
			}
			if !open {
				return join(path, k), "unknown field", true
			}
			ft = rawType // not ours: only its text is looked at
		}
		if p, why, ok := findProblem(obj[k], ft, join(path, k), open); ok {
			return p, why, true
		}
	}
	return "", "", false
}

// otherCase is the field name k spells in another case, or "".
func otherCase(fields map[string]reflect.Type, k string) string {
	for name := range fields {
		if strings.EqualFold(name, k) {
			return name
		}
	}
	return ""
}

// findControl returns the path of the first string in raw (valid JSON of
// any shape) holding a control character other than tab, CR and LF.
func findControl(raw []byte, path string) (string, string, bool) {
	if !bytes.Contains(raw, []byte(`\u00`)) && !bytes.Contains(raw, []byte(`\b`)) && !bytes.Contains(raw, []byte(`\f`)) {
		return "", "", false // a control character can only be written escaped
	}
	var v any
	json.Unmarshal(raw, &v)
	return controlIn(v, path)
}

// controlIn is findControl on a decoded value.
func controlIn(v any, path string) (string, string, bool) {
	switch v := v.(type) {
	case string:
		if hasControl(v) {
			return path, "must not hold control characters (only tab, CR and LF are allowed)", true
		}
	case []any:
		for i, item := range v {
			if p, why, ok := controlIn(item, fmt.Sprintf("%s[%d]", path, i)); ok {
				return p, why, true
			}
		}
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if hasControl(k) {
				return path, "holds a key with a control character (only tab, CR and LF are allowed)", true
			}
			if p, why, ok := controlIn(v[k], join(path, k)); ok {
				return p, why, true
			}
		}
	}
	return "", "", false
}

// hasControl tells whether s holds a C0 control character other than
// tab, CR and LF (NUL among them).
func hasControl(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 && c != '\t' && c != '\n' && c != '\r' {
			return true
		}
	}
	return false
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

// jsonFields maps the JSON names of t's fields (embedded
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
		out[name] = f.Type
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
