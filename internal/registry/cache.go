package registry

import (
	"container/list"
	"sync"
)

// cache holds content by digest, least recently used first out, within a
// bound on the bytes held.
type cache struct {
	mu    sync.Mutex
	max   int64
	bytes int64
	ll    *list.List // front: most recent
	items map[string]*list.Element
}

type cacheEntry struct {
	digest string
	data   []byte
}

func newCache(max int64) *cache {
	return &cache{max: max, ll: list.New(), items: map[string]*list.Element{}}
}

func (c *cache) get(digest string) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.items[digest]
	if e == nil {
		return nil, false
	}
	c.ll.MoveToFront(e)
	return e.Value.(*cacheEntry).data, true
}

// add keeps data unless it alone exceeds the bound.
func (c *cache) add(digest string, data []byte) {
	n := int64(len(data))
	if n > c.max {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.items[digest]; ok {
		return
	}
	c.items[digest] = c.ll.PushFront(&cacheEntry{digest, data})
	c.bytes += n
	for c.bytes > c.max {
		e := c.ll.Back()
		ent := e.Value.(*cacheEntry)
		c.ll.Remove(e)
		delete(c.items, ent.digest)
		c.bytes -= int64(len(ent.data))
	}
}

func (c *cache) size() (entries int, bytes int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.items), c.bytes
}
