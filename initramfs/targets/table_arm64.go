package targets

// Table lists the targets by benchmark target name.
var Table = map[string]Target{
	"nop": {Symbol: "lab/initramfs/targets.Nop.abi0", Want: []byte{0x1f, 0x20, 0x03, 0xd5}, What: "nop"},
}
