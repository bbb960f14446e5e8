package quota

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
)

// schema is what the front needs of a table: its key and its global
// secondary indexes.
type schema struct {
	key     []string // partition key, then sort key if any
	indexes []index
}

// index is one global secondary index: its key, and what it projects.
type index struct {
	name       string
	key        []string
	projection string   // ALL, KEYS_ONLY or INCLUDE
	include    []string // INCLUDE's non-key attributes
}

// entry is what index holds of an item of a table keyed by tableKey: the
// index's and the table's keys and the projected attributes, or nil when
// the item is not in the index (it lacks an index key attribute).
func (x index) entry(it item, tableKey []string) item {
	if !it.has(x.key) {
		return nil
	}
	if x.projection == "ALL" {
		return it
	}
	return it.only(slices.Concat(x.key, tableKey, x.include))
}

// size is the size of entry, x's entry of an item of itemSize bytes: the
// item's own size when x projects all of it.
func (x index) size(entry item, itemSize int) int {
	if x.projection == "ALL" {
		return itemSize
	}
	return entry.size()
}

// schemaOf is table's schema, asked of the emulator once: a request
// names its table, not the table's key or indexes.
func (c *call) schemaOf(table string) (*schema, error) {
	c.f.mu.Lock()
	s, ok := c.f.tables[table]
	c.f.mu.Unlock()
	if ok {
		return s, nil
	}
	a, err := c.ask("DescribeTable", map[string]string{"TableName": table})
	if err != nil {
		return nil, err
	}
	if a.status != http.StatusOK {
		return nil, fmt.Errorf("DescribeTable %s: %d %s", table, a.status, a.body)
	}
	type keyElement struct{ AttributeName, KeyType string }
	var out struct {
		Table struct {
			KeySchema              []keyElement
			GlobalSecondaryIndexes []struct {
				IndexName  string
				KeySchema  []keyElement
				Projection struct {
					ProjectionType   string
					NonKeyAttributes []string
				}
			}
		}
	}
	if err := json.Unmarshal(a.body, &out); err != nil {
		return nil, fmt.Errorf("DescribeTable %s: %w", table, err)
	}
	names := func(ks []keyElement) []string {
		slices.SortFunc(ks, func(a, b keyElement) int { return cmpKeyType(a.KeyType, b.KeyType) })
		var n []string
		for _, k := range ks {
			n = append(n, k.AttributeName)
		}
		return n
	}
	s = &schema{key: names(out.Table.KeySchema)}
	for _, g := range out.Table.GlobalSecondaryIndexes {
		s.indexes = append(s.indexes, index{name: g.IndexName, key: names(g.KeySchema),
			projection: g.Projection.ProjectionType, include: g.Projection.NonKeyAttributes})
	}
	c.f.mu.Lock()
	c.f.tables[table] = s
	c.f.mu.Unlock()
	return s, nil
}

// cmpKeyType orders HASH before RANGE.
func cmpKeyType(a, b string) int {
	switch {
	case a == b:
		return 0
	case a == "HASH":
		return -1
	}
	return 1
}

// indexNamed is table s's index called name.
func (s *schema) indexNamed(name string) (index, bool) {
	i := slices.IndexFunc(s.indexes, func(x index) bool { return x.name == name })
	if i < 0 {
		return index{}, false
	}
	return s.indexes[i], true
}
