#include "textflag.h"

// NOFRAME: no prologue, so the symbol's first word is the nop itself.
// Go's NOP mnemonic is a pseudo-instruction, so the encoding is spelt out.
TEXT ·Nop(SB),NOSPLIT|NOFRAME,$0-0
	WORD $0xd503201f // nop
	RET
