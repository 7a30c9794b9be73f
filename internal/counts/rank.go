package counts

import (
	"container/heap"
	"hash/maphash"
	"strings"
)

// ranker tallies a read grouped by type in memory that grows with the
// number of types but not with their names: a range of 31 days may hold
// 446,400 types (100 a counter item), and their names alone, up to 256
// bytes each, would be more than the function has. It keeps the name of a
// type only while the type ranks among the MaxSeries with most events
// (ties bytewise), the ones an answer can list; of every other type, a
// 128-bit hash of its name, its total, and its count per bucket. A type
// that leaves the top never comes back without an event of its own, which
// brings its name again: the others' totals only grow. So the top at the
// end is exact, as if every name had been kept.
type ranker struct {
	totals map[typeKey]int64
	cells  map[cell]int64 // a type's events by bucket
	typed  sum            // every typed event, by bucket
	top    topTypes
}

// typeKey is a type's name hashed with two seeds: two names collide with
// odds of 2^-128, a third of a chance in 10^33 over 446,400 types.
type typeKey [2]uint64

type cell struct {
	k typeKey
	b int
}

var typeSeeds = [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}

func keyOf(name string) typeKey {
	return typeKey{maphash.String(typeSeeds[0], name), maphash.String(typeSeeds[1], name)}
}

func newRanker() *ranker {
	return &ranker{totals: map[typeKey]int64{}, cells: map[cell]int64{}, top: topTypes{at: map[typeKey]*ranked{}}}
}

// add counts n events of type name in bucket b.
func (rk *ranker) add(name string, b int, n int64) {
	k := keyOf(name)
	rk.totals[k] += n
	rk.cells[cell{k, b}] += n
	rk.typed.add(b, n)
	rk.top.offer(name, k, rk.totals[k])
}

// tally is the ranker's sums as the answer's series take them: a sum for
// each type of the top, the other types' events summed, and overflow.
func (rk *ranker) tally(overflow *sum) tally {
	t := tally{byType: map[string]*sum{}, overflow: overflow, others: &sum{}, types: len(rk.totals)}
	named := map[typeKey]*sum{}
	for _, e := range rk.top.h {
		named[e.k] = &sum{}
		t.byType[e.name] = named[e.k]
	}
	for c, n := range rk.cells {
		if s := named[c.k]; s != nil {
			s.add(c.b, n)
		}
	}
	t.others.merge(&rk.typed)
	for _, s := range named {
		for b, n := range s.byBucket {
			t.others.add(b, -n)
		}
	}
	return t
}

// ranked is a type of the top.
type ranked struct {
	name  string
	k     typeKey
	total int64
	i     int // in the heap
}

// topTypes is the MaxSeries types with most events so far, weakest first
// (a heap), and where each is.
type topTypes struct {
	h  []*ranked
	at map[typeKey]*ranked
}

// offer sees type name reach total: it joins the top if it beats the
// weakest there, who leaves.
func (tp *topTypes) offer(name string, k typeKey, total int64) {
	if e := tp.at[k]; e != nil {
		e.total = total
		heap.Fix(tp, e.i)
		return
	}
	e := &ranked{name: strings.Clone(name), k: k, total: total}
	if len(tp.h) < MaxSeries {
		heap.Push(tp, e)
		tp.at[k] = e
		return
	}
	if w := tp.h[0]; weaker(w, e) {
		delete(tp.at, w.k)
		e.i, tp.h[0], tp.at[k] = 0, e, e
		heap.Fix(tp, 0)
	}
}

// weaker: a ranks after b, with fewer events, or as many and a name after
// b's bytewise.
func weaker(a, b *ranked) bool {
	return a.total < b.total || a.total == b.total && a.name > b.name
}

func (tp *topTypes) Len() int           { return len(tp.h) }
func (tp *topTypes) Less(i, j int) bool { return weaker(tp.h[i], tp.h[j]) }
func (tp *topTypes) Swap(i, j int) {
	tp.h[i], tp.h[j] = tp.h[j], tp.h[i]
	tp.h[i].i, tp.h[j].i = i, j
}
func (tp *topTypes) Push(x any) {
	e := x.(*ranked)
	e.i = len(tp.h)
	tp.h = append(tp.h, e)
}
func (tp *topTypes) Pop() any {
	e := tp.h[len(tp.h)-1]
	tp.h = tp.h[:len(tp.h)-1]
	return e
}
