//go:build tools

// Package initramfs pins u-root's init in go.mod: the initramfs builder
// compiles it into every guest image.
package initramfs

import _ "github.com/u-root/u-root/cmds/core/init"
