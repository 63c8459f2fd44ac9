package testbed

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"lab/internal/kbuild"
	"lab/internal/spec"
	"lab/internal/vm"
)

// fill sets every exported field of v, recursively, to a value that is not
// zero.
func fill(v reflect.Value) {
	switch v.Kind() {
	case reflect.String:
		v.SetString("x")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int64:
		v.SetInt(7)
	case reflect.Float64:
		v.SetFloat(7)
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(v.Elem())
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		fill(v.Index(0))
	case reflect.Struct:
		if v.Type() == reflect.TypeOf(time.Time{}) {
			v.Set(reflect.ValueOf(time.Unix(7, 0)))
			return
		}
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i))
			}
		}
	}
}

// zeroFields lists the fields of v, recursively, that are zero.
func zeroFields(v reflect.Value, path string) []string {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return []string{path}
		}
		return zeroFields(v.Elem(), path)
	case reflect.Slice:
		if v.Len() == 0 {
			return []string{path}
		}
		return zeroFields(v.Index(0), path+"[0]")
	case reflect.Struct:
		if v.Type() == reflect.TypeOf(time.Time{}) {
			if v.Interface().(time.Time).IsZero() {
				return []string{path}
			}
			return nil
		}
		var out []string
		for i := 0; i < v.NumField(); i++ {
			out = append(out, zeroFields(v.Field(i), path+"."+v.Type().Field(i).Name)...)
		}
		return out
	}
	if v.IsZero() {
		return []string{path}
	}
	return nil
}

// unrecorded lists the fields of a working type, recursively, that its record
// type does not have (by name): a field the working type gained that
// results.json would silently leave out. Fields JSON never wrote (`json:"-"`)
// are the working type's own.
func unrecorded(work, rec reflect.Type, path string) []string {
	for work.Kind() == reflect.Pointer || work.Kind() == reflect.Slice {
		work = work.Elem()
	}
	for rec.Kind() == reflect.Pointer || rec.Kind() == reflect.Slice {
		rec = rec.Elem()
	}
	if work.Kind() != reflect.Struct || rec.Kind() != reflect.Struct || work == rec || work == reflect.TypeOf(time.Time{}) {
		return nil
	}
	var out []string
	for i := 0; i < work.NumField(); i++ {
		f := work.Field(i)
		if !f.IsExported() || f.Tag.Get("json") == "-" {
			continue
		}
		r, ok := rec.FieldByName(f.Name)
		if !ok {
			out = append(out, path+"."+f.Name)
			continue
		}
		if f.Type.Kind() == reflect.Struct && r.Type.Kind() != reflect.Struct {
			continue // a wrapped value recorded as itself (spec.Duration)
		}
		out = append(out, unrecorded(f.Type, r.Type, path+"."+f.Name)...)
	}
	return out
}

// The converters record every field of the working types: a filled-in lab
// matrix, claim, build and QEMU outcome leave no field of their record
// empty, and every field of the working types has its place in the record.
func TestRecordEveryField(t *testing.T) {
	var m spec.Matrix
	var c spec.Claim
	var b kbuild.Info
	var a vm.Accel
	var o vm.Outcome
	for _, v := range []any{&m, &c, &b, &a, &o} {
		fill(reflect.ValueOf(v).Elem())
	}
	for _, tc := range []struct {
		name      string
		work, rec any
	}{
		{"matrix", m, RecordMatrix(m)},
		{"claim", c, RecordClaims([]spec.Claim{c})[0]},
		{"build", b, RecordBuild(b)},
		{"accel", a, recordAccel(a)},
		{"qemu", o, *recordOutcome(&o)},
	} {
		if z := zeroFields(reflect.ValueOf(tc.rec), tc.name); len(z) > 0 {
			t.Errorf("%s: not recorded: %s", tc.name, strings.Join(z, ", "))
		}
		if u := unrecorded(reflect.TypeOf(tc.work), reflect.TypeOf(tc.rec), tc.name); len(u) > 0 {
			t.Errorf("%s: no place in results.json: %s", tc.name, strings.Join(u, ", "))
		}
	}
	if recordOutcome(nil) != nil {
		t.Error("a boot that never started QEMU has a QEMU record")
	}
}
