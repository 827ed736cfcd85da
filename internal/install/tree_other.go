//go:build !linux

package install

import (
	"io"
	"os"
)

func (w *treeWalker) read() error { return w.readRoot() }

// readRoot walks the tree through os.Root, which never follows a link out
// of it.
func (w *treeWalker) readRoot() error {
	root, err := os.OpenRoot(w.dir)
	if err != nil {
		return err
	}
	defer root.Close()
	return w.walk(root, "", 0)
}

// walk records the folder r, whose path under the tree is prefix ("" or
// ending in "/"), depth folders down.
func (w *treeWalker) walk(r *os.Root, prefix string, depth int) error {
	if err := w.deep(depth); err != nil {
		return err
	}
	d, err := r.Open(".")
	if err != nil {
		return err
	}
	ents, err := d.ReadDir(-1)
	d.Close()
	if err != nil {
		return err
	}
	for _, e := range ents {
		if err := w.count(); err != nil {
			return err
		}
		p := prefix + e.Name()
		switch {
		case e.IsDir():
			sub, err := r.OpenRoot(e.Name())
			if err != nil {
				return err
			}
			err = w.walk(sub, p+"/", depth+1)
			sub.Close()
			if err != nil {
				return err
			}
		case !e.Type().IsRegular():
			w.odd = append(w.odd, p)
		default:
			if err := w.hashFile(r, e.Name(), p); err != nil {
				return err
			}
		}
	}
	return nil
}

func (w *treeWalker) hashFile(r *os.Root, name, p string) error {
	f, err := r.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	w.h.Reset()
	var size int64
	for {
		n, err := f.Read(w.buf)
		w.h.Write(w.buf[:n])
		size += int64(n)
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
	}
	w.hashed(p, size)
	return nil
}
