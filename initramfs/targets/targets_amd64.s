#include "textflag.h"

// NOFRAME: no prologue, so the symbol's first byte is the nop itself.
TEXT ·Nop(SB),NOSPLIT|NOFRAME,$0-0
	BYTE $0x90 // nop
	RET
