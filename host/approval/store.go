package approval

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// Record is one persisted approval.
type Record struct {
	// Label and URI identify the skill (the identity pair).
	Label string `json:"label"`
	URI   string `json:"uri"`
	// Approved is when the user approved.
	Approved time.Time `json:"approved"`
	// GrantTools records that the allowed-tools request was granted too.
	GrantTools bool `json:"grantTools,omitempty"`
}

// Store persists approvals in one JSON file, rewritten atomically (temporary
// file and rename) on every change. A Store with no path keeps approvals in
// memory only. It is safe for concurrent use.
type Store struct {
	path string
	mu   sync.Mutex
	recs map[string]Record
}

type storeFile struct {
	Version   int               `json:"version"`
	Approvals map[string]Record `json:"approvals"`
}

// DefaultPath is approvals.json in the skillport directory of the user's
// configuration directory.
func DefaultPath() (string, error) {
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("approval: %w", err)
	}
	return filepath.Join(dir, "skillport", "approvals.json"), nil
}

// Open loads the store at path; a missing file is an empty store. An empty
// path gives an in-memory store.
func Open(path string) (*Store, error) {
	s := &Store{path: path, recs: map[string]Record{}}
	if path == "" {
		return s, nil
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return nil, fmt.Errorf("approval: %w", err)
	}
	var f storeFile
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("approval: %s: %w; fix or delete the file (it only holds approvals)", path, err)
	}
	if f.Approvals != nil {
		s.recs = f.Approvals
	}
	return s, nil
}

// Path returns the file the store writes, "" for a memory store.
func (s *Store) Path() string { return s.path }

// Lookup returns the approval recorded under key.
func (s *Store) Lookup(key string) (Record, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.recs[key]
	return r, ok
}

// Save records an approval under key.
func (s *Store) Save(key string, r Record) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.recs[key] = r
	return s.flush()
}

// Revoke removes every approval of (label, uri) except the one under keep,
// and returns how many it removed. The host calls it when an entry with a
// different resources set arrives.
func (s *Store) Revoke(label, uri, keep string) (int, error) {
	return s.remove(func(k string, r Record) bool { return r.Label == label && r.URI == uri && k != keep })
}

// RevokeStale is Revoke with the key to keep computed by current, and only
// when the store holds an approval of (label, uri): a host ingests every
// listed skill, and most have no approval to compare with.
func (s *Store) RevokeStale(label, uri string, current func() string) (int, error) {
	keep, known := "", false
	return s.remove(func(k string, r Record) bool {
		if r.Label != label || r.URI != uri {
			return false
		}
		if !known {
			keep, known = current(), true
		}
		return k != keep
	})
}

// RemoveOrigin removes every approval of skills from label.
func (s *Store) RemoveOrigin(label string) (int, error) {
	return s.remove(func(_ string, r Record) bool { return r.Label == label })
}

func (s *Store) remove(match func(string, Record) bool) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for k, r := range s.recs {
		if match(k, r) {
			delete(s.recs, k)
			n++
		}
	}
	if n == 0 {
		return 0, nil
	}
	return n, s.flush()
}

// flush writes the file atomically; s.mu is held.
func (s *Store) flush() error {
	if s.path == "" {
		return nil
	}
	data, err := json.MarshalIndent(storeFile{Version: 1, Approvals: s.recs}, "", "  ")
	if err != nil {
		return err
	}
	dir := filepath.Dir(s.path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("approval: %w", err)
	}
	tmp, err := os.CreateTemp(dir, ".approvals-*.tmp")
	if err != nil {
		return fmt.Errorf("approval: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(append(data, '\n')); err != nil {
		tmp.Close()
		return fmt.Errorf("approval: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("approval: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("approval: %w", err)
	}
	if err := os.Rename(tmp.Name(), s.path); err != nil {
		return fmt.Errorf("approval: %w", err)
	}
	return nil
}
