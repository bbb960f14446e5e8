package reconciler

// SetOrigin puts where r's rotation passes begin, in id order, so a test
// can place a job last in a pass (the worst case) instead of at random.
func SetOrigin(r *Reconciler, id string) { r.origin = id }
