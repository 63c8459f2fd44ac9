// Command knowngen writes the Kconfig symbols lab knows without a source
// tree (internal/kconfig/known.txt.gz): every symbol the kernel trees named
// on its command line define, one a line, sorted. lab looks a fragment's
// options up there before extracting a source, and reads the source's own
// Kconfig files only for an option the list lacks.
//
//	go run ./internal/kconfig/knowngen -o internal/kconfig/known.txt.gz TREE...
package main

import (
	"bytes"
	"compress/gzip"
	"flag"
	"fmt"
	"os"
	"slices"

	"lab/internal/kconfig"
)

func main() {
	out := flag.String("o", "known.txt.gz", "the list to write")
	flag.Parse()
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: knowngen -o FILE KERNEL-TREE...")
		os.Exit(2)
	}
	all := map[string]bool{}
	for _, tree := range flag.Args() {
		syms, err := kconfig.Symbols(tree)
		if err != nil {
			fmt.Fprintln(os.Stderr, "knowngen:", err)
			os.Exit(1)
		}
		for s := range syms {
			all[s] = true
		}
	}
	var names []string
	for s := range all {
		names = append(names, s)
	}
	slices.Sort(names)
	var buf bytes.Buffer
	// No name or time in the header: the file is the same for the same trees.
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	for _, n := range names {
		fmt.Fprintln(zw, n)
	}
	err := zw.Close()
	if err == nil {
		err = os.WriteFile(*out, buf.Bytes(), 0o644)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "knowngen:", err)
		os.Exit(1)
	}
	fmt.Printf("%s: %d symbols of %v\n", *out, len(names), flag.Args())
}
