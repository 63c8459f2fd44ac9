#include "textflag.h"

// NOFRAME: no prologue, so each symbol's first bytes are the instruction the
// benchmark is named after.

TEXT ·Nop(SB),NOSPLIT|NOFRAME,$0-0
	BYTE $0x90 // nop
	RET

TEXT ·Push(SB),NOSPLIT|NOFRAME,$0-0
	BYTE $0x55 // push %rbp
	BYTE $0x5d // pop %rbp
	RET

TEXT ·Ret(SB),NOSPLIT|NOFRAME,$0-0
	RET
