package quota

import (
	"encoding/json"
	"errors"
	"net/http"
)

// change is one item a write touches, and the item before and after it.
type change struct {
	table  string
	schema *schema
	key    item   // the item's key
	put    item   // a put's whole item; nil for the others
	op     string // "put", "update", "delete" or "check" (a transaction's ConditionCheck)
	before item
	after  item
	// The sizes of put, before and after, each counted once: counting
	// converts every value, and a 400 KB item's cost showed.
	putSize, beforeSize, afterSize int
	// returned is an update's item after, when its answer carried it
	// (ReturnValues ALL_NEW), so the front need not read it again.
	returned item
}

func (ch *change) id() string { return ch.table + "\x00" + ch.key.id() }

// request names the change as a batch names it among its unprocessed
// items: a put by its whole item, a delete by its key.
func (ch *change) request() string {
	if ch.put != nil {
		return ch.table + "\x00" + ch.put.id()
	}
	return ch.id()
}

// errUnread is a write the front cannot read, which the emulator is
// left to answer.
var errUnread = errors.New("quota: a write the front cannot read")

// write holds a write (PutItem, UpdateItem, DeleteItem, BatchWriteItem,
// TransactWriteItems) to the item limit and the key rates, and meters it.
//
// A write is billed at the larger of its item before and after (a failed
// condition at the item as it stays). The front reads the item before
// itself, strongly consistent, with the item's other writes through the
// front held back until the write is done; the after is what the write
// put, or an update's own answer (forwardWrite), or read again.
// ReturnValues alone gives one side of a write, never both. The cost is
// one or two more requests to the emulator a write, and one item's writes
// made one at a time, which DynamoDB does too (docs/testing.md, "The
// quota front").
func (c *call) write() answer {
	chs, tx, err := c.changes()
	if err != nil {
		return c.pass()
	}
	for _, ch := range chs {
		if ch.putSize = ch.put.size(); ch.putSize > c.f.limits.ItemBytes {
			return c.tooLarge()
		}
	}
	ids := make([]string, 0, len(chs))
	for _, ch := range chs {
		ids = append(ids, ch.id())
	}
	defer c.f.lock(ids)()
	for _, ch := range chs {
		// An item the front cannot read (a key the emulator refuses) is a
		// write the emulator will refuse too: it answers it, unmetered.
		if ch.before, err = c.read(ch.table, ch.key); err != nil {
			return c.pass()
		}
		ch.beforeSize = ch.before.size()
	}
	if k, ok := c.f.Meter.allow(writeKeys(chs), true); !ok {
		return c.throttled(k, true)
	}
	a, err := c.forwardWrite(chs)
	if err != nil {
		return failed(err)
	}
	if !consumed(a) {
		return a
	}
	if err := c.settle(chs, a.status == http.StatusOK, unprocessed(a)); err != nil {
		return failed(err)
	}
	for _, ch := range chs {
		if ch.afterSize > c.f.limits.ItemBytes {
			if err := c.restore(chs); err != nil {
				return failed(err)
			}
			return c.tooLarge()
		}
	}
	c.charge(chs, tx)
	return a
}

// changes reads the items a write touches, and whether it is a
// transaction.
func (c *call) changes() ([]*change, bool, error) {
	var in struct {
		TableName    string
		Item, Key    item
		RequestItems map[string][]struct {
			PutRequest    *struct{ Item item }
			DeleteRequest *struct{ Key item }
		}
		TransactItems []map[string]struct {
			TableName string
			Item, Key item
		}
	}
	if json.Unmarshal(c.body, &in) != nil {
		return nil, false, errUnread
	}
	var chs []*change
	add := func(table, op string, key, put item) {
		chs = append(chs, &change{table: table, op: op, key: key, put: put})
	}
	switch c.action {
	case "PutItem":
		add(in.TableName, "put", nil, in.Item)
	case "UpdateItem", "DeleteItem":
		add(in.TableName, map[string]string{"UpdateItem": "update", "DeleteItem": "delete"}[c.action], in.Key, nil)
	case "BatchWriteItem":
		for table, reqs := range in.RequestItems {
			for _, r := range reqs {
				switch {
				case r.PutRequest != nil:
					add(table, "put", nil, r.PutRequest.Item)
				case r.DeleteRequest != nil:
					add(table, "delete", r.DeleteRequest.Key, nil)
				}
			}
		}
	case "TransactWriteItems":
		ops := map[string]string{"Put": "put", "Update": "update", "Delete": "delete", "ConditionCheck": "check"}
		for _, t := range in.TransactItems {
			for name, w := range t {
				add(w.TableName, ops[name], w.Key, w.Item)
			}
		}
	}
	return chs, c.action == "TransactWriteItems", c.keyChanges(chs)
}

// keyChanges gives each change its table's schema, and a put its key.
func (c *call) keyChanges(chs []*change) error {
	for _, ch := range chs {
		s, err := c.schemaOf(ch.table)
		if err != nil || ch.op == "" {
			return errUnread
		}
		ch.schema = s
		if ch.op == "put" {
			ch.key = ch.put.only(s.key)
		} else {
			ch.put = nil
		}
	}
	return nil
}

// read is the item at key in table, read strongly consistent; nil when
// there is none.
func (c *call) read(table string, key item) (item, error) {
	a, err := c.ask("GetItem", map[string]any{"TableName": table, "Key": key, "ConsistentRead": true})
	if err != nil {
		return nil, err
	}
	if a.status != http.StatusOK {
		return nil, errors.New("quota: GetItem " + table + ": " + string(a.body))
	}
	var out struct{ Item item }
	if err := json.Unmarshal(a.body, &out); err != nil {
		return nil, err
	}
	return out.Item, nil
}

// settle finds each change's item after the write: what it put, nothing
// after a delete, the item read again after an update, and the item as
// it was when the write did not apply (a failed condition, a cancelled
// transaction, a batch's item left unprocessed).
func (c *call) settle(chs []*change, applied bool, skipped map[string]bool) error {
	for _, ch := range chs {
		switch {
		case !applied || ch.op == "check" || skipped[ch.request()]:
			ch.after, ch.afterSize = ch.before, ch.beforeSize
		case ch.op == "put":
			ch.after, ch.afterSize = ch.put, ch.putSize
		case ch.op == "delete":
			ch.after, ch.afterSize = nil, 0
		case ch.returned != nil:
			ch.after, ch.afterSize = ch.returned, ch.returned.size()
		default:
			after, err := c.read(ch.table, ch.key)
			if err != nil {
				return err
			}
			ch.after, ch.afterSize = after, after.size()
		}
	}
	return nil
}

// forwardWrite passes the write on. A lone UpdateItem that asked for no
// ReturnValues, or for ALL_NEW, is sent asking ALL_NEW, so its answer
// carries the item after and the front need not read it again; what the
// caller did not ask for is taken off the answer.
func (c *call) forwardWrite(chs []*change) (answer, error) {
	var in map[string]json.RawMessage
	if c.action != "UpdateItem" || json.Unmarshal(c.body, &in) != nil {
		return c.forward()
	}
	var asked string
	_ = json.Unmarshal(in["ReturnValues"], &asked)
	if asked != "" && asked != "NONE" && asked != "ALL_NEW" {
		return c.forward()
	}
	in["ReturnValues"] = json.RawMessage(`"ALL_NEW"`)
	body, err := json.Marshal(in)
	if err != nil {
		return c.forward()
	}
	a, err := c.send(c.action, body)
	if err != nil || a.status != http.StatusOK {
		return a, err
	}
	var out map[string]json.RawMessage
	if err := json.Unmarshal(a.body, &out); err != nil {
		return a, err
	}
	// No Attributes (an emulator that left them out) leaves returned nil,
	// and the item is read again.
	_ = json.Unmarshal(out["Attributes"], &chs[0].returned)
	if asked != "ALL_NEW" {
		delete(out, "Attributes")
		a.body, err = json.Marshal(out)
	}
	return a, err
}

// unprocessed are the ids of the items a BatchWriteItem answered it left
// unwritten (UnprocessedItems): they cost nothing.
func unprocessed(a answer) map[string]bool {
	var out struct {
		UnprocessedItems map[string][]struct {
			PutRequest    *struct{ Item item }
			DeleteRequest *struct{ Key item }
		}
	}
	if json.Unmarshal(a.body, &out) != nil {
		return nil
	}
	ids := map[string]bool{}
	for table, reqs := range out.UnprocessedItems {
		for _, r := range reqs {
			switch {
			case r.PutRequest != nil:
				ids[table+"\x00"+r.PutRequest.Item.id()] = true
			case r.DeleteRequest != nil:
				ids[table+"\x00"+r.DeleteRequest.Key.id()] = true
			}
		}
	}
	return ids
}

// restore puts back the items a write changed, for an update that left an
// item over the limit: DynamoDB refuses such an update whole, and the
// emulator, which applied it, must hold what DynamoDB would. (A stream on
// the table sees the write and its undoing, which DynamoDB's would not.)
func (c *call) restore(chs []*change) error {
	for _, ch := range chs {
		if equal(ch.before, ch.after) {
			continue
		}
		action, in := "PutItem", map[string]any{"TableName": ch.table, "Item": ch.before}
		if ch.before == nil {
			action, in = "DeleteItem", map[string]any{"TableName": ch.table, "Key": ch.key}
		}
		a, err := c.ask(action, in)
		if err != nil {
			return err
		}
		if a.status != http.StatusOK {
			return errors.New("quota: restoring an item: " + string(a.body))
		}
	}
	return nil
}

// writeKeys are the keys a write's rate is held to: each item's
// partition key value, and each index key value of the item as it is
// and as it is put (an index that cannot take its writes throttles the
// table's, https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/GSI.ThroughputConsiderations.html).
func writeKeys(chs []*change) []Scope {
	var keys []Scope
	for _, ch := range chs {
		keys = append(keys, keyScope(ch.table, "", ch.schema.key, ch.key))
		for _, x := range ch.schema.indexes {
			for _, it := range []item{ch.before, ch.put} {
				if e := x.entry(it, ch.schema.key); e != nil {
					keys = append(keys, keyScope(ch.table, x.name, x.key, e))
				}
			}
		}
	}
	return keys
}

// charge meters a write: each item at the larger of its size before and
// after, twice in a transaction; each index by the entries it writes
// (GSI.ThroughputConsiderations, cited at writeKeys): an entry put or
// deleted costs its own size, an entry whose index key changed costs a
// delete and a put, one whose projected attributes changed a put, and
// one that did not change nothing.
func (c *call) charge(chs []*change, tx bool) {
	times := 1.0
	if tx {
		times = 2
	}
	for _, ch := range chs {
		units := writeUnits(max(ch.beforeSize, ch.afterSize)) * times
		c.f.Meter.charge(keyScope(ch.table, "", ch.schema.key, ch.key), units, true)
		for _, x := range ch.schema.indexes {
			b, a := x.entry(ch.before, ch.schema.key), x.entry(ch.after, ch.schema.key)
			moved := b != nil && a != nil && !equal(b.only(x.key), a.only(x.key))
			if b != nil && (a == nil || moved) {
				c.f.Meter.charge(keyScope(ch.table, x.name, x.key, b), writeUnits(x.size(b, ch.beforeSize)), true)
			}
			if a != nil && (b == nil || moved || !equal(a, b)) {
				c.f.Meter.charge(keyScope(ch.table, x.name, x.key, a), writeUnits(x.size(a, ch.afterSize)), true)
			}
		}
	}
}
