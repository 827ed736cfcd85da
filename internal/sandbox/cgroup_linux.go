package sandbox

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// cgroups is where runs get a control group of their own: one budget of
// memory and processes for everything a run starts, enforced by the kernel.
//
// With cgroup v2 that is a child of a delegated directory
// ([Options.CgroupParent]) and bwrap is cloned straight into it
// (CLONE_INTO_CGROUP). With cgroup v1 (the memory and pids hierarchies,
// writable by root) it is a child of the caller's own groups, and bwrap is
// forked from a thread that sits in the new groups at that moment, so that
// nothing of the run ever runs outside them.
type cgroups struct {
	v2        string // delegated v2 directory, or ""
	mem, pids string // v1 parents
}

// cgroupSeq names runs' groups uniquely within this process.
var cgroupSeq atomic.Uint64

// findCgroups returns where run groups can be made, or nil and why not.
func findCgroups(parent string) (*cgroups, error) {
	var c *cgroups
	if parent != "" {
		ctl, err := os.ReadFile(filepath.Join(parent, "cgroup.subtree_control"))
		if err != nil {
			return nil, fmt.Errorf("Options.CgroupParent %s: %w (want a delegated cgroup v2 directory)", parent, err)
		}
		for _, want := range []string{"memory", "pids"} {
			if !strings.Contains(" "+strings.TrimSpace(string(ctl))+" ", " "+want+" ") {
				return nil, fmt.Errorf("Options.CgroupParent %s: the %s controller is not enabled for its children (cgroup.subtree_control is %q); echo +memory +pids into it", parent, want, strings.TrimSpace(string(ctl)))
			}
		}
		c = &cgroups{v2: parent}
	} else {
		mem, err1 := v1Dir("memory")
		pids, err2 := v1Dir("pids")
		if err := errors.Join(err1, err2); err != nil {
			return nil, err
		}
		c = &cgroups{mem: mem, pids: pids}
	}
	// A probe: the directories must take a child we can set up and remove.
	g, err := c.create(defaultLimits)
	if err != nil {
		return nil, err
	}
	return c, g.remove()
}

// v1Dir is the caller's own group in the v1 hierarchy of controller, found
// from /proc/self/cgroup and the hierarchy's mount point.
func v1Dir(controller string) (string, error) {
	own, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", err
	}
	path := ""
	for _, l := range strings.Split(string(own), "\n") {
		f := strings.SplitN(l, ":", 3)
		if len(f) == 3 && slices.Contains(strings.Split(f[1], ","), controller) {
			path = f[2]
		}
	}
	if path == "" {
		return "", fmt.Errorf("no cgroup v1 %s hierarchy", controller)
	}
	mounts, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return "", err
	}
	defer mounts.Close()
	s := bufio.NewScanner(mounts)
	for s.Scan() {
		pre, post, ok := strings.Cut(s.Text(), " - ")
		pf, qf := strings.Fields(pre), strings.Fields(post)
		if !ok || len(pf) < 5 || len(qf) < 3 || qf[0] != "cgroup" || !slices.Contains(strings.Split(qf[2], ","), controller) {
			continue
		}
		// pf[3] is the mount's root inside the hierarchy, pf[4] where it is.
		rel, err := filepath.Rel(pf[3], path)
		if err != nil || strings.HasPrefix(rel, "..") {
			continue
		}
		return filepath.Join(pf[4], rel), nil
	}
	return "", fmt.Errorf("the cgroup v1 %s hierarchy is not mounted", controller)
}

// runGroup is one run's group (v2) or pair of groups (v1).
type runGroup struct {
	c         *cgroups
	mem, pids string // the same directory for v2
}

func (c *cgroups) create(l Limits) (_ *runGroup, err error) {
	name := fmt.Sprintf("skillport-run-%d-%d", os.Getpid(), cgroupSeq.Add(1))
	g := &runGroup{c: c}
	defer func() {
		if err != nil {
			g.remove()
			err = fmt.Errorf("cgroup: %w", err)
		}
	}()
	mem := strconv.FormatInt(l.MemoryBytes, 10)
	pids := strconv.Itoa(l.Processes)
	if c.v2 != "" {
		g.mem = filepath.Join(c.v2, name)
		g.pids = g.mem
		if err := os.Mkdir(g.mem, 0o755); err != nil {
			return g, err
		}
		return g, errors.Join(
			write(g.mem, "memory.max", mem),
			write(g.mem, "memory.swap.max", "0"),
			write(g.mem, "pids.max", pids))
	}
	g.mem = filepath.Join(c.mem, name)
	if err := os.Mkdir(g.mem, 0o755); err != nil {
		return g, err
	}
	g.pids = filepath.Join(c.pids, name)
	if err := os.Mkdir(g.pids, 0o755); err != nil {
		return g, err
	}
	if err := errors.Join(write(g.mem, "memory.limit_in_bytes", mem), write(g.pids, "pids.max", pids)); err != nil {
		return g, err
	}
	// Without swap accounting the file is absent and there is no swap to bound.
	if _, err := os.Stat(filepath.Join(g.mem, "memory.memsw.limit_in_bytes")); err == nil {
		return g, write(g.mem, "memory.memsw.limit_in_bytes", mem)
	}
	return g, nil
}

func write(dir, file, value string) error {
	return os.WriteFile(filepath.Join(dir, file), []byte(value), 0)
}

// start starts cmd inside the group.
func (g *runGroup) start(cmd *exec.Cmd) error {
	if g.c.v2 != "" {
		dir, err := os.Open(g.mem)
		if err != nil {
			return err
		}
		defer dir.Close()
		cmd.SysProcAttr.UseCgroupFD = true
		cmd.SysProcAttr.CgroupFD = int(dir.Fd())
		return cmd.Start()
	}
	// v1 places threads: fork from a thread that is in the run's groups,
	// then put the thread back where it was.
	runtime.LockOSThread()
	tid := strconv.Itoa(syscall.Gettid())
	home := []string{g.c.mem, g.c.pids}
	moved := 0
	var err error
	for _, dir := range []string{g.mem, g.pids} {
		if err = write(dir, "tasks", tid); err != nil {
			break
		}
		moved++
	}
	if err == nil {
		err = cmd.Start()
	}
	for i := range moved {
		if berr := write(home[i], "tasks", tid); berr != nil {
			// Leave the thread locked: the runtime ends it with this
			// goroutine rather than reuse a thread charged to the run.
			return errors.Join(err, fmt.Errorf("cgroup: moving thread back: %w", berr))
		}
	}
	runtime.UnlockOSThread()
	return err
}

// usage is what the kernel recorded about a run's group.
type usage struct {
	peakMemory  int64 // bytes
	oomKills    int64 // processes the memory budget killed
	pidsRefused int64 // forks the process budget refused
}

func (g *runGroup) usage() usage {
	var u usage
	if g.c.v2 != "" {
		u.peakMemory = readInt(g.mem, "memory.peak")
		u.oomKills = readKey(g.mem, "memory.events", "oom_kill")
	} else {
		u.peakMemory = readInt(g.mem, "memory.max_usage_in_bytes")
		u.oomKills = readKey(g.mem, "memory.oom_control", "oom_kill")
	}
	u.pidsRefused = readKey(g.pids, "pids.events", "max")
	return u
}

func readInt(dir, file string) int64 {
	b, _ := os.ReadFile(filepath.Join(dir, file))
	n, _ := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	return n
}

// readKey reads "key N" from a flat-keyed cgroup file.
func readKey(dir, file, key string) int64 {
	b, _ := os.ReadFile(filepath.Join(dir, file))
	for _, l := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(l, " "); ok && k == key {
			n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n
		}
	}
	return 0
}

// remove kills whatever is left in the group and removes it. The run's pid
// namespace is normally gone already; its processes may still be exiting.
func (g *runGroup) remove() error {
	var err error
	for _, dir := range []string{g.mem, g.pids} {
		if dir == "" || (dir == g.pids && g.pids == g.mem) {
			continue
		}
		deadline := time.Now().Add(5 * time.Second)
		for {
			if err = os.Remove(dir); err == nil || errors.Is(err, os.ErrNotExist) {
				err = nil
				break
			}
			if time.Now().After(deadline) {
				break
			}
			if b, rerr := os.ReadFile(filepath.Join(dir, "cgroup.procs")); rerr == nil {
				for _, f := range strings.Fields(string(b)) {
					if pid, _ := strconv.Atoi(f); pid > 0 {
						syscall.Kill(pid, syscall.SIGKILL)
					}
				}
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	if err != nil {
		return fmt.Errorf("cgroup: %w", err)
	}
	return nil
}
