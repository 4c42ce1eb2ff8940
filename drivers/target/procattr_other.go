//go:build !linux

package target

import "os/exec"

func setProcAttr(*exec.Cmd) {}
