#!/usr/bin/env bash
# build-bench.sh ARCH SRC_DIR VMLINUX OUT_DIR
#
# Builds the kernel's BPF benchmark runner, tools/testing/selftests/bpf/bench,
# as a STATIC binary (no shared libraries needed in the guest), using the
# tree's own selftests Makefile for libbpf, bpftool, vmlinux.h, the BPF
# skeletons and the objects, plus a tiny wrapper makefile that adds -static
# to the final link of bench only.
#
#   ARCH     x86_64 (alias amd64) or arm64 (alias aarch64; cross-compiled with
#            aarch64-linux-gnu-gcc, needs libelf-dev:arm64 zlib1g-dev:arm64)
#   SRC_DIR  a Linux source tree (e.g. Debian's linux-source-6.12). It is only
#            read: the parts bench needs are copied (tar, mtimes kept) to
#            OUT_DIR/ARCH/src and built there, because the selftests Makefile
#            writes generated files into its own directory. (The copy is a
#            snapshot: do not run this while another process is switching
#            commits in SRC_DIR. Files deleted from SRC_DIR stay in the copy.)
#   VMLINUX  a vmlinux ELF with a .BTF section (CONFIG_DEBUG_INFO_BTF=y) of the
#            same ARCH, or a raw BTF file (/sys/kernel/btf/vmlinux, or one cut
#            out of a distribution kernel with extract-btf.py); it is dumped to
#            vmlinux.h for the BPF programs that include it. trig-* do not use
#            vmlinux.h at all; the full set needs a 6.12 BTF with networking
#            and crypto types (a tinyconfig guest vmlinux is not enough).
#   OUT_DIR  results: OUT_DIR/ARCH/bench (the binary), OUT_DIR/ARCH/build
#            (intermediate files, kept so that a rerun is incremental).
#
# Environment knobs:
#   CLANG      clang for the BPF objects (default: clang-19, else clang)
#   JOBS       make -j (default: nproc)
#   BENCH_SET  full    - the tree's bench with all benchmarks
#              trigger - only trig-* and count-* benchmarks (bench.c trimmed,
#                        links bench_trigger.o + bench_count.o); no BPF object
#                        that includes vmlinux.h is compiled
#              auto    - full; if that fails, every benchs/bench_*.c whose
#                        objects build, the rest listed in
#                        OUT_DIR/ARCH/left-out.txt (default)
#   RELEASE    non-empty: -O2 for bench.c and helpers too (bench_*.c are
#              always -O2, as upstream; default is upstream's -O0 for the rest)
#   STRIP      non-empty: strip OUT_DIR/ARCH/bench (2.3 MB -> 1.6 MB)
#   V=1        verbose make
#   CROSS_COMPILE  the cross prefix, overriding the default (aarch64-linux-gnu-
#              for arm64, none for x86_64) when the host is not x86_64
set -euo pipefail

usage() { echo "usage: $0 ARCH SRC_DIR VMLINUX OUT_DIR" >&2; exit 2; }
[ $# -eq 4 ] || usage

case "$1" in
x86_64|amd64)  ARCH=x86_64; KARCH=x86_64; CROSS=  ;;
arm64|aarch64) ARCH=arm64;  KARCH=arm64;  CROSS=aarch64-linux-gnu- ;;
*) echo "unsupported ARCH '$1' (x86_64 or arm64)" >&2; exit 2 ;;
esac
# The caller knows whether this host builds ARCH natively.
CROSS=${CROSS_COMPILE-$CROSS}
SRC=$(realpath -e "$2")
VMLINUX=$(realpath -e "$3")
OUT=$(realpath -m "$4")/$ARCH
STAGE=$OUT/src
BPFDIR=$STAGE/tools/testing/selftests/bpf
BUILD=$OUT/build
JOBS=${JOBS:-$(nproc)}
BENCH_SET=${BENCH_SET:-auto}

[ -f "$SRC/tools/testing/selftests/bpf/bench.c" ] || { echo "$SRC/tools/testing/selftests/bpf/bench.c not found: is $SRC a kernel tree?" >&2; exit 1; }

if [ -z "${CLANG:-}" ]; then
	if command -v clang-19 >/dev/null; then CLANG=clang-19; else CLANG=clang; fi
fi
command -v "$CLANG" >/dev/null || { echo "no $CLANG: apt-get install clang-19" >&2; exit 1; }
CC=${CROSS}gcc
command -v "$CC" >/dev/null || { echo "no $CC" >&2; exit 1; }

# Fail early, with the package to install, rather than deep inside make.
need_lib() { # lib.a package
	local f
	f=$("$CC" -print-file-name="$1")
	[ "$f" != "$1" ] && [ -f "$f" ] || { echo "$CC cannot find $1: apt-get install $2" >&2; exit 1; }
}
need_lib libelf.a "libelf-dev${CROSS:+:arm64}"
need_lib libz.a   "zlib1g-dev${CROSS:+:arm64}"
need_lib libc.a   "libc6-dev${CROSS:+:arm64}"

# The VMLINUX must carry BTF of the target arch (bpftool checks the BTF).
if [ "$(head -c4 "$VMLINUX" | od -An -tx1 | tr -d ' ')" = 7f454c46 ]; then
	# (no "| grep -q" under pipefail: grep exiting early fails readelf)
	if ! readelf -S "$VMLINUX" | grep -c '\.BTF' >/dev/null; then
		echo "$VMLINUX has no .BTF section: build it with CONFIG_DEBUG_INFO_BTF=y" >&2
		exit 1
	fi
	m=$(readelf -h "$VMLINUX" | sed -n 's/^ *Machine: *//p')
	case "$ARCH:$m" in
	x86_64:*X86-64*|arm64:*AArch64*) ;;
	*) echo "$VMLINUX is for '$m', not $ARCH" >&2; exit 1 ;;
	esac
elif [ "$(head -c2 "$VMLINUX" | od -An -tx1 | tr -d ' ')" != 9feb ]; then
	echo "$VMLINUX is neither an ELF vmlinux nor a raw (little-endian) BTF file" >&2
	exit 1
fi

mkdir -p "$BUILD" "$STAGE"

# The selftests Makefile writes into its own directory (it generates
# prog_tests/tests.h even for "make bench"), so build from a copy of just the
# parts of SRC that bench needs. tar keeps the mtimes, so a rerun stays
# incremental; a changed SRC file gets a new mtime and is rebuilt.
stage_paths=(
	tools/arch tools/build tools/include tools/lib tools/scripts tools/bpf
	tools/testing/selftests/lib.mk tools/testing/selftests/bpf
	kernel/bpf		# bpftool compiles kernel/bpf/disasm.c
	scripts/bpf_doc.py	# libbpf generates bpf_helper_defs.h with it
	# tools/include/uapi/asm/bpf_perf_event.h includes
	# "../../arch/arm64/include/uapi/asm/bpf_perf_event.h" (found through
	# -I tools/include, i.e. the main tree's arch/); likewise gfp_types.h.
	arch/x86/include/uapi arch/arm64/include/uapi include/uapi
	include/linux/gfp_types.h
)
tar -C "$SRC" -cf - "${stage_paths[@]}" | tar -C "$STAGE" -xf -

# LLVM tools of the same version as CLANG, for the feature check and bpftool.
ver=$("$CLANG" -dumpversion | cut -d. -f1)
llvm_tool() { if command -v "$1-$ver" >/dev/null; then echo "$1-$ver"; else echo "$1"; fi; }

# Wrapper around the selftests Makefile: the same rules, plus static linking
# for the bench binary alone (target-specific, so libbpf.so, bpftool and the
# rest are built as usual), plus a "bench-subset" target: bench.c with its
# benchmark table cut down (bench-subset.c, generated below) linked with only
# the benchs/bench_*.o given in BENCH_SUBSET_OBJS. Rewritten only on change.
wrapper=$OUT/bench-static.mk
cat > "$wrapper.tmp" <<'MK'
# Generated by build-bench.sh: run with make -C tools/testing/selftests/bpf -f THIS
include Makefile
$(OUTPUT)/bench: LDFLAGS += -static
$(OUTPUT)/bench-subset.o: $(OUTPUT)/bench-subset.c bench.h testing_helpers.h $(BPFOBJ)
	$(call msg,CC,,$@)
	$(Q)$(CC) $(CFLAGS) -c $< -o $@
$(OUTPUT)/bench-subset: LDFLAGS += -static
$(OUTPUT)/bench-subset: LDLIBS += -lm
$(OUTPUT)/bench-subset: $(OUTPUT)/bench-subset.o $(BENCH_SUBSET_OBJS) \
			$(TESTING_HELPERS) $(TRACE_HELPERS) $(CGROUP_HELPERS) $(BPFOBJ)
	$(call msg,BINARY,,$@)
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) $(filter %.a %.o,$^) $(LDLIBS) -o $@
bench-subset: $(OUTPUT)/bench-subset ;
MK
cmp -s "$wrapper.tmp" "$wrapper" && rm -f "$wrapper.tmp" || mv "$wrapper.tmp" "$wrapper"

margs=(
	-C "$BPFDIR" -f "$wrapper" -j"$JOBS"
	OUTPUT="$BUILD"
	VMLINUX_BTF="$VMLINUX"
	CLANG="$CLANG"
	LLVM_CONFIG="$(llvm_tool llvm-config)"
	LLVM_STRIP="$(llvm_tool llvm-strip)"
	LLC="$(llvm_tool llc)"
	HOSTCC=gcc HOSTLD=ld HOSTAR=ar
)
[ -n "$CROSS" ] && margs+=(ARCH="$KARCH" CROSS_COMPILE="$CROSS")
[ -n "${RELEASE:-}" ] && margs+=(RELEASE=1)
[ -n "${V:-}" ] && margs+=(V="$V")

install_bench() { # built-file
	cp "$1" "$OUT/bench.tmp" && mv "$OUT/bench.tmp" "$OUT/bench"
}

build_full() {
	echo "== build-bench: full bench ($ARCH, $CLANG, -j$JOBS)"
	# -k: every BPF object that can be built is built, so that a fallback
	# to a subset finds them, and the log shows every failure, not the first.
	make -k "${margs[@]}" bench && install_bench "$BUILD/bench"
}

# build_subset NAME OBJ...: bench with only the benchmarks defined in the
# given benchs/bench_*.o (their "const struct bench bench_*" and argp
# symbols, read with nm); bench.c's tables are filtered down to those.
build_subset() {
	local name=$1 o objs=() syms
	shift
	for o in "$@"; do objs+=("$BUILD/$o"); done
	echo "== build-bench: $name bench ($ARCH, $CLANG, -j$JOBS): $*"
	make "${margs[@]}" "${objs[@]}" || return 1
	syms=$(for o in "${objs[@]}"; do "${CROSS}nm" -g --defined-only "$o"; done |
		awk '$3 ~ /^bench_/ { printf "%s ", $3 }')
	awk -v syms="$syms" '
	BEGIN { n = split(syms, a, " "); for (i = 1; i <= n; i++) keep[a[i]] = 1 }
	# extern const struct bench bench_x;   extern struct argp bench_x_argp;
	/^extern (const )?struct (bench|argp) bench_[A-Za-z0-9_]+;/ {
		s = $NF; sub(/;.*/, "", s)
		if (!(s in keep)) next
	}
	/^static const struct argp_child bench_parsers\[\] = \{/ { inparsers = 1 }
	inparsers && /^\t\{ &bench_/ {
		s = $0; sub(/^\t\{ &/, "", s); sub(/,.*/, "", s)
		skip = !(s in keep)
	}
	inparsers && skip { if ($0 ~ /\},[ \t]*$/) skip = 0; next }
	inparsers && /^\};/ { inparsers = 0 }
	/^static const struct bench \*benchs\[\] = \{/ { inbenchs = 1 }
	inbenchs && /^\t&bench_/ {
		s = $0; sub(/^\t&/, "", s); sub(/,.*/, "", s)
		if (!(s in keep)) next
	}
	inbenchs && /^\};/ { inbenchs = 0 }
	{ print }
	' "$BPFDIR/bench.c" > "$BUILD/bench-subset.c.tmp"
	cmp -s "$BUILD/bench-subset.c.tmp" "$BUILD/bench-subset.c" && rm -f "$BUILD/bench-subset.c.tmp" ||
		mv "$BUILD/bench-subset.c.tmp" "$BUILD/bench-subset.c"
	make "${margs[@]}" BENCH_SUBSET_OBJS="${objs[*]}" bench-subset &&
		install_bench "$BUILD/bench-subset"
}

# After a failed full build: the benchs/bench_*.o that do build (each asked
# of make on its own, so that a stale object from an earlier run whose
# sources no longer compile does not count).
build_buildable() {
	local c o ok=() left=()
	for c in "$BPFDIR"/benchs/bench_*.c; do
		o=$(basename "${c%.c}.o")
		if make "${margs[@]}" "$BUILD/$o" >/dev/null 2>&1; then ok+=("$o"); else left+=("$o"); fi
	done
	echo "== build-bench: left out (their BPF object or C file does not compile): ${left[*]:-none}" >&2
	printf '%s\n' "${left[@]}" > "$OUT/left-out.txt"
	build_subset "buildable" "${ok[@]}"
}

rm -f "$OUT/left-out.txt"
case "$BENCH_SET" in
full)    build_full ;;
trigger) build_subset "trigger-only" bench_count.o bench_trigger.o ;;
auto)
	if ! build_full; then
		echo "== build-bench: the full bench failed (errors above); building the benchmarks that do build" >&2
		build_buildable
	fi ;;
*) echo "BENCH_SET must be full, trigger or auto" >&2; exit 2 ;;
esac

[ -n "${STRIP:-}" ] && "${CROSS}strip" "$OUT/bench"
echo "== build-bench: $OUT/bench"
command -v file >/dev/null && file "$OUT/bench"
if readelf -l "$OUT/bench" | grep -c 'INTERP\|DYNAMIC' >/dev/null; then
	echo "ERROR: $OUT/bench is not static" >&2
	exit 1
fi
ls -l "$OUT/bench"
