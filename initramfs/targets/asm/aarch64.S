// The producer: the loop a benchmark measures, as a static program with no
// runtime, so that nothing but the kernel shares the vCPU with it.
//
// fd 3 is a shared page: [0] counts the calls, [8] says which loop to run
// (the index in targets.loops). A call of a user-space target costs a few
// instructions, so those loops count in batches of 64; a syscall costs
// hundreds, and those loops count every call (in batches of 64 the count
// of a 5.7 M/s loop would move in steps of 0.001 %).
// Regenerate program.go after a change: go generate ./initramfs/targets

	.text
	.globl _start
_start:
	mov	x8, #222		// mmap(0, 4096, PROT_READ|PROT_WRITE, MAP_SHARED, 3, 0)
	mov	x0, #0
	mov	x1, #4096
	mov	x2, #3
	mov	x3, #1
	mov	x4, #3
	mov	x5, #0
	svc	#0
	tbnz	x0, #63, fail
	mov	x19, x0
	ldr	w0, [x19, #8]
	cmp	w0, #0
	b.eq	loop_nop
	cmp	w0, #1
	b.eq	loop_push
	cmp	w0, #2
	b.eq	loop_ret
	cmp	w0, #3
	b.eq	loop_getpgid
	cmp	w0, #4
	b.eq	loop_flock
fail:
	mov	x8, #94			// exit_group(1)
	mov	x0, #1
	svc	#0

loop_nop:
	mov	w20, #64
1:	bl	nop
	subs	w20, w20, #1
	b.ne	1b
	ldr	x21, [x19]
	add	x21, x21, #64
	str	x21, [x19]
	b	loop_nop

loop_push:
	mov	w20, #64
1:	bl	push
	subs	w20, w20, #1
	b.ne	1b
	ldr	x21, [x19]
	add	x21, x21, #64
	str	x21, [x19]
	b	loop_push

loop_ret:
	mov	w20, #64
1:	bl	ret
	subs	w20, w20, #1
	b.ne	1b
	ldr	x21, [x19]
	add	x21, x21, #64
	str	x21, [x19]
	b	loop_ret

loop_getpgid:
	mov	x8, #155		// getpgid(0)
	mov	x0, #0
	svc	#0
	ldr	x21, [x19]
	add	x21, x21, #1
	str	x21, [x19]
	b	loop_getpgid

// flock on an fd that is never open: it fails fast with EBADF after its
// entry, which is what the objpool series' flock loop measured.
loop_flock:
	mov	x8, #32			// flock(0x7878, 0x8787)
	mov	x0, #0x7878
	mov	x1, #0x8787
	svc	#0
	ldr	x21, [x19]
	add	x21, x21, #1
	str	x21, [x19]
	b	loop_flock

// The targets: each starts with the instruction its benchmark is named after.
	.p2align 4
nop:	nop
	ret

	.p2align 4
push:	stp	x29, x30, [sp, #-16]!
	mov	x29, sp
	ldp	x29, x30, [sp], #16
	ret

	.p2align 4
ret:	ret
