package targets

func table() map[string]Target {
	return map[string]Target{
		"nop":  {Name: "nop", Want: []byte{0x90}, What: "nop"},
		"push": {Name: "push", Want: []byte{0x55}, What: "push %rbp"},
		"ret":  {Name: "ret", Want: []byte{0xc3}, What: "ret"},
	}
}
