package fake

// Reset forgets every count and amount (not the calls still under way,
// which end on their own), so one provider can serve several
// tests (or benchmark rounds) that each measure from zero.
func (p *Provider) Reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	clear(p.calls)
	clear(p.gens)
	clear(p.spent)
	clear(p.lanes)
}
