#include "textflag.h"

// Markers of a measured sample for lab's instruction profile (the
// insncount QEMU plugin, internal/insnprof): nopl 0x4c410131(%rax) and
// nopl 0x4c410130(%rax), the architected multi-byte NOP (0f 1f /0) that
// touches no register, flag or memory, with a displacement no compiler
// pads with. Section id 1.

// func sectionStart()
TEXT ·sectionStart(SB), NOSPLIT, $0-0
	BYTE $0x0f; BYTE $0x1f; BYTE $0x80; BYTE $0x31; BYTE $0x01; BYTE $0x41; BYTE $0x4c
	RET

// func sectionStop()
TEXT ·sectionStop(SB), NOSPLIT, $0-0
	BYTE $0x0f; BYTE $0x1f; BYTE $0x80; BYTE $0x30; BYTE $0x01; BYTE $0x41; BYTE $0x4c
	RET
