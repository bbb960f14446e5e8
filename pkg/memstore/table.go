package memstore

import "sync"

// table is one side table in memory (the buckets, slots, tenants,
// quarantine and batch records stores'): values by key behind one lock.
// Each method is one step under the lock, as each of DynamoDB's writes is
// atomic on its item, so no store built on it decides between a read and
// its write. The zero table is empty and ready.
type table[K comparable, V any] struct {
	mu sync.Mutex
	m  map[K]V
}

// get is k's value, and whether there is one.
func (t *table[K, V]) get(k K) (V, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	v, ok := t.m[k]
	return v, ok
}

// put sets k's value to v.
func (t *table[K, V]) put(k K, v V) {
	t.change(k, func(V, bool) (V, bool) { return v, true })
}

// putIf sets k's value to v only if k has a value (exists) or has none
// (!exists), as DynamoDB's attribute_exists and attribute_not_exists
// conditions on the key do, and reports whether it did.
func (t *table[K, V]) putIf(k K, v V, exists bool) bool {
	done := false
	t.change(k, func(cur V, ok bool) (V, bool) {
		done = ok == exists
		return v, done
	})
	return done
}

// change gives f k's value (ok: whether there is one) and keeps what f
// answers when f says to write it, all under the lock: a conditional
// write, or a read (f never writes) that must see one moment.
func (t *table[K, V]) change(k K, f func(v V, ok bool) (V, bool)) {
	t.mu.Lock()
	defer t.mu.Unlock()
	v, ok := t.m[k]
	if next, write := f(v, ok); write {
		if t.m == nil {
			t.m = map[K]V{}
		}
		t.m[k] = next
	}
}

// remove deletes k's value; a key with none is no error.
func (t *table[K, V]) remove(k K) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.m, k)
}

// values answers the values keep keeps, in no order.
func (t *table[K, V]) values(keep func(V) bool) []V {
	t.mu.Lock()
	defer t.mu.Unlock()
	var vs []V
	for _, v := range t.m {
		if keep(v) {
			vs = append(vs, v)
		}
	}
	return vs
}
