package main

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"unsafe"
)

// openPTY opens a pseudo-terminal pair with the standard library alone (what
// github.com/creack/pty does on Linux): the controller side for the test, the terminal side for
// the child. The controller is non-blocking, so closing it ends a pending Read.
func openPTY() (controller, terminal *os.File, err error) {
	fd, err := syscall.Open("/dev/ptmx", syscall.O_RDWR|syscall.O_NOCTTY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, nil, err
	}
	var unlock int32
	if err := ioctl(fd, syscall.TIOCSPTLCK, uintptr(unsafe.Pointer(&unlock))); err != nil {
		syscall.Close(fd)
		return nil, nil, fmt.Errorf("unlockpt: %w", err)
	}
	var n uint32
	if err := ioctl(fd, syscall.TIOCGPTN, uintptr(unsafe.Pointer(&n))); err != nil {
		syscall.Close(fd)
		return nil, nil, fmt.Errorf("ptsname: %w", err)
	}
	if err := syscall.SetNonblock(fd, true); err != nil {
		syscall.Close(fd)
		return nil, nil, err
	}
	controller = os.NewFile(uintptr(fd), "/dev/ptmx")
	terminal, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		controller.Close()
		return nil, nil, err
	}
	return controller, terminal, nil
}

func ioctl(fd int, req, arg uintptr) error {
	if _, _, errno := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), req, arg); errno != 0 {
		return errno
	}
	return nil
}

// isPTYClosed reports the error a controller read gives once every terminal side is closed.
func isPTYClosed(err error) bool { return errors.Is(err, syscall.EIO) }
