#include "textflag.h"

// NOFRAME: no prologue, so each symbol's first word is the instruction the
// benchmark is named after. The encodings are spelt out: Go's NOP is a
// pseudo-instruction and its assembler would rewrite a frame push.

TEXT ·Nop(SB),NOSPLIT|NOFRAME,$0-0
	WORD $0xd503201f // nop
	RET

TEXT ·Push(SB),NOSPLIT|NOFRAME,$0-0
	WORD $0xa9bf7bfd // stp x29, x30, [sp, #-16]!
	WORD $0x910003fd // mov x29, sp
	WORD $0xa8c17bfd // ldp x29, x30, [sp], #16
	RET

TEXT ·Ret(SB),NOSPLIT|NOFRAME,$0-0
	RET
