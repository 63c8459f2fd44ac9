package targets

func table() map[string]Target {
	return map[string]Target{
		"nop":  {Symbol: pkg + "Nop.abi0", Want: []byte{0x90}, What: "nop", Call: Nop},
		"push": {Symbol: pkg + "Push.abi0", Want: []byte{0x55}, What: "push %rbp", Call: Push},
		"ret":  {Symbol: pkg + "Ret.abi0", Want: []byte{0xc3}, What: "ret", Call: Ret},
	}
}
