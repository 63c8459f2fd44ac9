package spec

import (
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// countKeys are the matrix's whole-number keys that count something a run
// needs at least one of; zeroOK those where 0 means something (maxactive:
// the kernel's default).
var (
	countKeys = []string{"cpus", "producers", "boots", "numa", "sockets", "clusters", "cores", "threads"}
	zeroOK    = map[string]bool{"maxactive": true, "seeds": true} // seeds 0: the default
)

// TestEveryCountIsKnown: a whole-number matrix key added later must be put
// in countKeys (and then refused below 1, file and flag alike) or in zeroOK.
func TestEveryCountIsKnown(t *testing.T) {
	ty := reflect.TypeOf(Matrix{})
	for i := 0; i < ty.NumField(); i++ {
		f := ty.Field(i)
		k := f.Type.Kind()
		if k == reflect.Slice {
			k = f.Type.Elem().Kind()
		}
		key := strings.Split(f.Tag.Get("yaml"), ",")[0]
		if k != reflect.Int || key == "" || key == "-" {
			continue
		}
		if !zeroOK[key] && !strings.Contains(" "+strings.Join(countKeys, " ")+" ", " "+key+" ") {
			t.Errorf("matrix.%s is a whole number in neither countKeys nor zeroOK: say whether 0 is a value", key)
		}
	}
}

// TestCountsFileAndFlagsAlike: a count below 1 is refused in the lab file
// (at its line) and as a flag, with the same words; 1 is taken by both.
func TestCountsFileAndFlagsAlike(t *testing.T) {
	const head = "name: t\nseries: s1\nmatrix:\n"
	list := map[string]bool{"cpus": true, "producers": true, "numa": true}
	for _, key := range countKeys {
		for _, v := range []int{0, -1, 1} {
			t.Run(key+" "+strconv.Itoa(v), func(t *testing.T) {
				val := strconv.Itoa(v)
				if list[key] {
					val = "[" + val + "]"
				}
				_, path, fileErr := parse(t, head+"  "+key+": "+val+"\n")
				f, flagErr := parseFlags(t, "--"+key, strconv.Itoa(v))
				if flagErr == nil {
					lab, _, err := parse(t, "name: t\nseries: s1\n")
					if err != nil {
						t.Fatal(err)
					}
					flagErr = f.Apply(lab)
				}
				if v >= 1 {
					if fileErr != nil || flagErr != nil {
						t.Errorf("%s %d refused: file %v, flag %v", key, v, fileErr, flagErr)
					}
					return
				}
				if fileErr == nil || flagErr == nil {
					t.Fatalf("%s %d taken: file %v, flag %v", key, v, fileErr, flagErr)
				}
				fileMsg := strings.TrimPrefix(fileErr.Error(), path+":4: ")
				flagMsg := strings.TrimPrefix(flagErr.Error(), "with the command-line flags: ")
				if fileMsg == fileErr.Error() {
					t.Errorf("file: %q is not at %s:4", fileErr, path)
				}
				if _, ok := flagErr.(*FlagError); !ok {
					t.Errorf("flag: %v is not a FlagError (a usage error)", flagErr)
				}
				if fileMsg != flagMsg || !strings.HasPrefix(fileMsg, key+" "+strconv.Itoa(v)+": want ") {
					t.Errorf("file says %q, flag says %q: want one message, %q", fileMsg, flagMsg, key+" "+strconv.Itoa(v)+": want ...")
				}
			})
		}
	}
}
