package sourcecounter

import (
	"maps"

	"github.com/shardline/shardline/internal/counts"
)

// kept is what a container knows of the types an item counts by name: ids
// known to be in its kept set (the set only grows, so this is a subset of
// it), and whether they were all of it when the item was last read. A full
// item's set never changes again, so what is known of it stays exact.
type kept struct {
	ids   map[string]bool
	exact bool
}

func (k kept) clone() kept { return kept{ids: maps.Clone(k.ids), exact: k.exact} }

// full: the item is known to keep limit types, and so no other.
func (k kept) full(limit int) bool { return k.exact && len(k.ids) >= limit }

// maxKnown bounds the items whose kept types a container remembers; past
// it the memory starts again, and an item near its cap is read again.
const maxKnown = 1 << 12

func (c *Counter) knownTypes(k itemKey) kept {
	c.mu.Lock()
	defer c.mu.Unlock()
	if kt, ok := c.known[k]; ok {
		return kt.clone()
	}
	return kept{ids: map[string]bool{}}
}

func (c *Counter) rememberTypes(k itemKey, kt kept) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.known == nil || len(c.known) > maxKnown {
		c.known = map[itemKey]kept{}
	}
	c.known[k] = kt
}

func (c *Counter) maxTypes() int {
	if c.MaxTypes > 0 {
		return c.MaxTypes
	}
	return counts.MaxTypesPerItem
}

// Expression budget of one update: DynamoDB allows 4 KB of update
// expression; each counter term is about a dozen characters.
const (
	maxCounters = 200
	maxTypes    = 40
)

// chunk is what one update carries: its first n records, the types among
// them counted by name (with their ids in the item), how many of those ids
// are not known to be kept yet, and how many records go to the overflow
// counters.
type chunk struct {
	n        int
	named    map[string]string // type -> id
	order    []string          // the named types, in the order met
	fresh    int
	overflow int
	// read: the next record's type may or may not be kept, and the cap is
	// too near to add it blind; read the item before updating it.
	read bool
}

// plan cuts the first chunk of recs and decides, type by type, whether it
// is counted by name or in the overflow. A type is counted by name when the
// item keeps it, or when there is room to keep it; in the overflow only
// when the item is known to be full without it (or will be, by this very
// update, whose condition then holds the kept set to what was read). So a
// type's events of one item (ten minutes) are either all counted by name or
// all in the overflow.
func (u *updater) plan(recs []record) chunk {
	c := chunk{named: map[string]string{}}
	limit := u.c.maxTypes()
	counters := map[string]bool{}
	over := map[string]bool{} // types of this chunk sent to the overflow
	for i, r := range recs {
		id, named := c.named[r.typ]
		fresh := false
		if !named && !over[r.typ] {
			id = u.typeID(r.typ)
			room := limit - len(u.kept.ids) - c.fresh
			switch {
			case u.fallback:
			case u.kept.ids[id]:
				named = true
			case room > 0:
				named, fresh = true, true
			case !u.kept.exact:
				c.read = i == 0
				c.n = i
				return c
			}
		}
		counter := r.time.Format("04") + "\x00"
		if named {
			counter = r.time.Format("04") + id
		}
		if !counters[counter] && len(counters) == maxCounters || named && c.named[r.typ] == "" && len(c.named) == maxTypes {
			c.n = i
			return c
		}
		counters[counter] = true
		switch {
		case named && c.named[r.typ] == "":
			c.named[r.typ] = id
			c.order = append(c.order, r.typ)
			if fresh {
				c.fresh++
			}
		case !named:
			over[r.typ] = true
		}
		if !named {
			c.overflow++
		}
	}
	c.n = len(recs)
	return c
}

// learned updates what is known of the kept set after chunk c was applied:
// its named ids are kept. If that makes the cap, the set is known exactly:
// the update's condition allowed no more ids in the set than those known.
func (u *updater) learned(c chunk) {
	for _, t := range c.order {
		u.kept.ids[c.named[t]] = true
	}
	if c.fresh > 0 {
		u.kept.exact = len(u.kept.ids) >= u.c.maxTypes()
	}
}
