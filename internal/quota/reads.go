package quota

import (
	"encoding/json"
	"errors"
	"net/http"
)

// errNoIndex is a search of an index its table does not have, which the
// emulator is left to refuse.
var errNoIndex = errors.New("quota: no such index")

// pass forwards a request the front cannot measure (one it cannot read,
// on a table the emulator does not know), so the emulator answers it.
func (c *call) pass() answer {
	a, err := c.forward()
	if err != nil {
		return failed(err)
	}
	return a
}

// getItem meters a GetItem by the item it read.
func (c *call) getItem() answer {
	var in struct {
		TableName            string
		Key                  item
		ConsistentRead       bool
		ProjectionExpression string
		AttributesToGet      []string
	}
	if json.Unmarshal(c.body, &in) != nil {
		return c.pass()
	}
	s, err := c.schemaOf(in.TableName)
	if err != nil {
		return c.pass()
	}
	key := keyScope(in.TableName, "", s.key, in.Key)
	if k, ok := c.f.Meter.allow([]Scope{key}, false); !ok {
		return c.throttled(k, false)
	}
	a, err := c.forward()
	if err != nil {
		return failed(err)
	}
	if a.status != http.StatusOK {
		return a
	}
	var out struct{ Item item }
	_ = json.Unmarshal(a.body, &out)
	size := out.Item.size()
	// A projection trims what is answered, not what is read: GetItem's
	// units are counted on the whole item, so a projected get is measured
	// by reading the whole item again.
	if in.ProjectionExpression != "" || len(in.AttributesToGet) > 0 {
		whole, err := c.read(in.TableName, in.Key)
		if err != nil {
			return failed(err)
		}
		size = whole.size()
	}
	c.f.Meter.charge(key, readUnits(size, in.ConsistentRead), false)
	return a
}

// batchGetItem meters each key of a BatchGetItem as a GetItem of its own
// (each item rounded up on its own); a key left unprocessed is not read.
func (c *call) batchGetItem() answer {
	type tableKeys struct {
		Keys           []item
		ConsistentRead bool
	}
	var in struct{ RequestItems map[string]tableKeys }
	if json.Unmarshal(c.body, &in) != nil {
		return c.pass()
	}
	schemas := map[string]*schema{}
	var keys []Scope
	for table, r := range in.RequestItems {
		s, err := c.schemaOf(table)
		if err != nil {
			return c.pass()
		}
		schemas[table] = s
		for _, k := range r.Keys {
			keys = append(keys, keyScope(table, "", s.key, k))
		}
	}
	if k, ok := c.f.Meter.allow(keys, false); !ok {
		return c.throttled(k, false)
	}
	a, err := c.forward()
	if err != nil || a.status != http.StatusOK {
		return c.answerOr(a, err)
	}
	var out struct {
		Responses       map[string][]item
		UnprocessedKeys map[string]tableKeys
	}
	_ = json.Unmarshal(a.body, &out)
	for table, r := range in.RequestItems {
		s := schemas[table]
		sizes := map[string]int{}
		for _, it := range out.Responses[table] {
			sizes[it.only(s.key).id()] = it.size()
		}
		skipped := map[string]bool{}
		for _, k := range out.UnprocessedKeys[table].Keys {
			skipped[k.id()] = true
		}
		for _, k := range r.Keys {
			if !skipped[k.id()] {
				c.f.Meter.charge(keyScope(table, "", s.key, k), readUnits(sizes[k.id()], r.ConsistentRead), false)
			}
		}
	}
	return a
}

// answerOr is a, or the answer to err when there is one.
func (c *call) answerOr(a answer, err error) answer {
	if err != nil {
		return failed(err)
	}
	return a
}

// transactGetItems meters a TransactGetItems: each item strongly
// consistent, and paid twice.
func (c *call) transactGetItems() answer {
	var in struct {
		TransactItems []struct {
			Get struct {
				TableName string
				Key       item
			}
		}
	}
	if json.Unmarshal(c.body, &in) != nil {
		return c.pass()
	}
	var keys []Scope
	for _, t := range in.TransactItems {
		s, err := c.schemaOf(t.Get.TableName)
		if err != nil {
			return c.pass()
		}
		keys = append(keys, keyScope(t.Get.TableName, "", s.key, t.Get.Key))
	}
	if k, ok := c.f.Meter.allow(keys, false); !ok {
		return c.throttled(k, false)
	}
	a, err := c.forward()
	if err != nil || a.status != http.StatusOK {
		return c.answerOr(a, err)
	}
	var out struct{ Responses []struct{ Item item } }
	_ = json.Unmarshal(a.body, &out)
	for i, k := range keys {
		size := 0
		if i < len(out.Responses) {
			size = out.Responses[i].Item.size()
		}
		c.f.Meter.charge(k, 2*readUnits(size, true), false)
	}
	return a
}

// search is a Query's or a Scan's request, as far as the front reads it.
type search struct {
	TableName, IndexName      string
	KeyConditionExpression    string
	ExpressionAttributeNames  map[string]string
	ExpressionAttributeValues item
	ConsistentRead            bool
	FilterExpression          string
	ProjectionExpression      string
	Select                    string
	AttributesToGet           []string
}

// query meters a Query by the size of every item it read, summed and
// then rounded up once, against its partition key value.
func (c *call) query() answer { return c.search(true) }

// scan meters a Scan as a Query, against its table or index alone (a
// scan reads every partition, so no one key value pays for it).
func (c *call) scan() answer { return c.search(false) }

func (c *call) search(keyed bool) answer {
	var in search
	if json.Unmarshal(c.body, &in) != nil {
		return c.pass()
	}
	s, err := c.schemaOf(in.TableName)
	if err != nil {
		return c.pass()
	}
	key, x := Scope{Table: in.TableName, Index: in.IndexName}, index{key: s.key, projection: "ALL"}
	if in.IndexName != "" {
		if x, err = c.indexOf(s, in.IndexName); err != nil {
			return c.pass()
		}
	}
	if v, ok := keyValue(in.KeyConditionExpression, x.key[0], in.ExpressionAttributeNames, in.ExpressionAttributeValues); keyed && ok {
		key.Key = display(v)
	}
	if key.Key != "" {
		if k, ok := c.f.Meter.allow([]Scope{key}, false); !ok {
			return c.throttled(k, false)
		}
	}
	a, err := c.forward()
	if err != nil || a.status != http.StatusOK {
		return c.answerOr(a, err)
	}
	read, err := c.itemsRead(in, a)
	if err != nil {
		return failed(err)
	}
	size := 0
	for _, it := range read {
		size += x.entry(it, s.key).size()
	}
	c.f.Meter.charge(key, readUnits(size, in.ConsistentRead), false)
	return a
}

// indexOf is s's index called name.
func (c *call) indexOf(s *schema, name string) (index, error) {
	x, ok := s.indexNamed(name)
	if !ok {
		return index{}, errNoIndex
	}
	return x, nil
}

// itemsRead are the items a search read. DynamoDB charges a Query or a
// Scan for the items it read, before its filter drops some and its
// projection trims them; when a search has either, the front reads its
// page again without them (the same key condition, start key and limit,
// so the same items), one more request to the emulator.
func (c *call) itemsRead(in search, a answer) ([]item, error) {
	body := a.body
	if in.FilterExpression != "" || in.ProjectionExpression != "" || in.Select != "" || len(in.AttributesToGet) > 0 {
		var raw map[string]json.RawMessage
		if err := json.Unmarshal(c.body, &raw); err != nil {
			return nil, err
		}
		for _, k := range []string{"FilterExpression", "ProjectionExpression", "Select", "AttributesToGet", "QueryFilter", "ScanFilter"} {
			delete(raw, k)
		}
		again, err := c.ask(c.action, raw)
		if err != nil {
			return nil, err
		}
		body = again.body
	}
	var out struct{ Items []item }
	if err := json.Unmarshal(body, &out); err != nil {
		return nil, err
	}
	return out.Items, nil
}
