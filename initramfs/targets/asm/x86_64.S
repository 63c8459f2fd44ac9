# The producer: the loop a benchmark measures, as a static program with no
# runtime, so that nothing but the kernel shares the vCPU with it.
#
# fd 3 is a shared page: [0] counts the calls, [8] says which loop to run
# (the index in targets.loops). A call of a user-space target costs a few
# instructions, so those loops count in batches of 64; a syscall costs
# hundreds, and those loops count every call (in batches of 64 the count
# of a 5.7 M/s loop would move in steps of 0.001 %).
# Regenerate program.go after a change: go generate ./initramfs/targets

	.text
	.globl _start
_start:
	mov	$9, %eax		# mmap(0, 4096, PROT_READ|PROT_WRITE, MAP_SHARED, 3, 0)
	xor	%edi, %edi
	mov	$4096, %esi
	mov	$3, %edx
	mov	$1, %r10d
	mov	$3, %r8d
	xor	%r9d, %r9d
	syscall
	test	%rax, %rax
	js	fail
	mov	%rax, %rbx
	mov	8(%rbx), %eax
	cmp	$0, %eax
	je	loop_nop
	cmp	$1, %eax
	je	loop_push
	cmp	$2, %eax
	je	loop_ret
	cmp	$3, %eax
	je	loop_getpgid
	cmp	$4, %eax
	je	loop_flock
fail:
	mov	$231, %eax		# exit_group(1)
	mov	$1, %edi
	syscall

loop_nop:
	mov	$64, %ebp
1:	call	nop
	dec	%ebp
	jnz	1b
	addq	$64, (%rbx)
	jmp	loop_nop

loop_push:
	mov	$64, %ebp
1:	call	push
	dec	%ebp
	jnz	1b
	addq	$64, (%rbx)
	jmp	loop_push

loop_ret:
	mov	$64, %ebp
1:	call	ret
	dec	%ebp
	jnz	1b
	addq	$64, (%rbx)
	jmp	loop_ret

loop_getpgid:
	mov	$121, %eax		# getpgid(0)
	xor	%edi, %edi
	syscall
	addq	$1, (%rbx)
	jmp	loop_getpgid

# flock on an fd that is never open: it fails fast with EBADF after its
# entry, which is what the objpool series' flock loop measured.
loop_flock:
	mov	$73, %eax		# flock(0x7878, 0x8787)
	mov	$0x7878, %edi
	mov	$0x8787, %esi
	syscall
	addq	$1, (%rbx)
	jmp	loop_flock

# The targets: each starts with the instruction its benchmark is named after.
	.p2align 4
nop:	nop
	ret

	.p2align 4
push:	push	%rbp
	pop	%rbp
	ret

	.p2align 4
ret:	ret
