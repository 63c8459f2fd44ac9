package targets

// Instruction words are little-endian in the file.
func table() map[string]Target {
	return map[string]Target{
		"nop":  {Name: "nop", Want: []byte{0x1f, 0x20, 0x03, 0xd5}, What: "nop"},
		"push": {Name: "push", Want: []byte{0xfd, 0x7b, 0xbf, 0xa9}, What: "stp x29, x30, [sp, #-16]!"},
		"ret":  {Name: "ret", Want: []byte{0xc0, 0x03, 0x5f, 0xd6}, What: "ret"},
	}
}
