package acp

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"strings"
	"sync"
	"syscall"
)

// Workspaces: with conversation_root set, each conversation's agent works in
// <conversation_root>/<conversation id>. The agent gets that directory as a path (its process
// cwd and its ACP session's cwd), so whoever can change the root's entries can move an agent
// anywhere: the root must be the server's user's alone. The harness's own operations under it go
// through an os.Root, which never resolves a name outside the directory it holds open, and a
// conversation's directory is checked on every turn, warm process or not, before the path is
// handed to an agent (docs/acp.md "Working directories").

// privateMode is the only permission a workspace may have beyond narrower ones: the server's
// user's alone.
const privateMode fs.FileMode = 0o700

// workspaceError refuses a turn (or the provider's start) because a working directory is not
// safe to hand to an agent. Its message is the harness's own, not the agent's, so it becomes the
// execution's error message as it is; it names the directory relative to the root, not the
// server's file layout.
type workspaceError struct {
	message string
	detail  error // the full cause, with the absolute path, for the server's log
}

func (e *workspaceError) Error() string { return e.message }
func (e *workspaceError) Unwrap() error { return e.detail }

// workspaces holds the conversation root open. The handle is opened, and the root made private,
// at Start (a root that cannot be made the server's refuses to start), or on first use when the
// provider was not started; it is checked against the configured path on every use.
type workspaces struct {
	path string // absolute, as configured

	mu   sync.Mutex
	root *os.Root // nil until opened, and after close
}

// open opens the root if needed and checks it (Start calls it to refuse early).
func (w *workspaces) open() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	_, err := w.rootLocked()
	return err
}

// rootLocked opens the root if needed and checks it: still the directory the configured path
// names (else the handle is reopened on what the path names now), owned by the server's user,
// and no wider than 0700 (tightened when it is: the root is the server's and holds no
// conversation's work itself). The caller holds mu for as long as it uses the root, so that
// close never pulls the descriptor from under an operation.
func (w *workspaces) rootLocked() (*os.Root, error) {
	if w.root != nil {
		if err := w.checkRoot(w.root); err == nil || !errors.Is(err, errRootMoved) {
			return w.root, err
		}
		_ = w.root.Close()
		w.root = nil
	}
	if err := os.MkdirAll(w.path, privateMode); err != nil {
		return nil, w.rootError("could not be created", err)
	}
	root, err := os.OpenRoot(w.path)
	if err != nil {
		return nil, w.rootError("could not be opened", err)
	}
	if err := w.checkRoot(root); err != nil {
		_ = root.Close()
		if errors.Is(err, errRootMoved) {
			return nil, w.rootError("changed while it was being opened", err)
		}
		return nil, err
	}
	w.root = root
	return root, nil
}

var errRootMoved = errors.New("the configured path names another directory than the one held open")

// checkRoot checks the open root through its own descriptor (fstat, fchmod), so that what is
// checked is what later operations use.
func (w *workspaces) checkRoot(root *os.Root) error {
	dir, err := root.Open(".")
	if err != nil {
		return w.rootError("could not be opened", err)
	}
	defer dir.Close()
	held, err := dir.Stat()
	if err != nil {
		return w.rootError("could not be read", err)
	}
	named, err := os.Stat(w.path)
	if err != nil || !os.SameFile(held, named) {
		return errRootMoved
	}
	if owner, self := ownerOf(held), os.Geteuid(); owner != self {
		return &workspaceError{
			message: "ACP conversation_root is owned by another user; the agents get their working directory as a path under it, so it must be the server's alone",
			detail: fmt.Errorf("ACP conversation_root %s is owned by uid %d, not by the server's user (uid %d): "+
				"the agents get their working directory as a path under it, so it must be the server's alone; "+
				"give it to the server's user or configure another", w.path, owner, self),
		}
	}
	if held.Mode().Perm()&^privateMode != 0 {
		if err := dir.Chmod(privateMode); err != nil {
			return w.rootError("could not be made 0700", err)
		}
	}
	return nil
}

func (w *workspaces) rootError(what string, err error) error {
	return &workspaceError{
		message: "ACP conversation_root " + what,
		detail:  fmt.Errorf("ACP conversation_root %s %s: %w", w.path, what, err),
	}
}

// prepare returns the conversation's working directory, created 0700 through the root on the
// conversation's first turn. An existing one is used only if it is a directory (a symlink is
// never followed), the server's user's, and no wider than 0700; anything else fails the turn and
// is left exactly as it is: it may hold the conversation's earlier work.
func (w *workspaces) prepare(conversation string) (string, error) {
	dir, ok := conversationDir(w.path, conversation)
	if !ok {
		return "", errConversationDir
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	root, err := w.rootLocked()
	if err != nil {
		return "", err
	}
	info, err := root.Lstat(conversation)
	if errors.Is(err, fs.ErrNotExist) {
		err = root.Mkdir(conversation, privateMode)
		if err != nil && !errors.Is(err, fs.ErrExist) { // ErrExist: planted meanwhile, checked below
			return "", w.dirError(conversation, dir, "could not be created: "+errorKind(err), err)
		}
		info, err = root.Lstat(conversation)
	}
	if err != nil {
		return "", w.dirError(conversation, dir, "could not be read: "+errorKind(err), err)
	}
	if reason := unsafeWorkspace(info); reason != "" {
		return "", w.dirError(conversation, dir, reason, nil)
	}
	return dir, nil
}

// unsafeWorkspace says why info (from Lstat) is not a working directory to hand to an agent,
// or "" when it is one.
func unsafeWorkspace(info fs.FileInfo) string {
	switch owner, self := ownerOf(info), os.Geteuid(); {
	case info.Mode()&fs.ModeSymlink != 0:
		return "is a symbolic link"
	case !info.IsDir():
		return "is not a directory"
	case owner != self:
		return fmt.Sprintf("belongs to another user (uid %d)", owner)
	case info.Mode().Perm()&^privateMode != 0:
		return fmt.Sprintf("is open to other users (mode %04o, wider than 0700)", info.Mode().Perm())
	}
	return ""
}

func (w *workspaces) dirError(conversation, dir, reason string, cause error) error {
	detail := fmt.Errorf("the conversation's working directory %s %s", dir, reason)
	if cause != nil {
		detail = fmt.Errorf("%w: %w", detail, cause)
	}
	return &workspaceError{
		message: fmt.Sprintf("ACP working directory <conversation_root>/%s %s; it was left as it is and the turn did not run", conversation, reason),
		detail:  detail,
	}
}

// remove deletes the conversation's working directory through the root: a symlink planted in
// its place is removed itself, never followed.
func (w *workspaces) remove(conversation string) error {
	if _, ok := conversationDir(w.path, conversation); !ok {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	root, err := w.rootLocked()
	if err != nil {
		return err
	}
	return root.RemoveAll(conversation)
}

// close releases the root's descriptor; a later use opens it again.
func (w *workspaces) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.root != nil {
		_ = w.root.Close()
		w.root = nil
	}
}

// logRefusal tells the operator, in the server's log, which directory a turn refused and why
// (the execution's message names it relative to the root only).
func (p *Provider) logRefusal(executionID string, refused *workspaceError) {
	if log := p.log.Load(); log != nil {
		log.Warn("ACP turn refused its working directory", slog.String("provider", p.settings.id),
			slog.String("executionId", executionID), slog.Any("error", refused.detail))
	}
}

// ownerOf is the uid that owns info's file (-1 where the platform does not say).
func ownerOf(info fs.FileInfo) int {
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		return int(st.Uid)
	}
	return -1
}

// errorKind is err's last part ("permission denied"), without the path an *fs.PathError holds.
func errorKind(err error) string {
	var pathErr *fs.PathError
	if errors.As(err, &pathErr) {
		err = pathErr.Err
	}
	return strings.TrimSpace(err.Error())
}
