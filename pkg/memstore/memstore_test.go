package memstore_test

import (
	"testing"

	"github.com/aijobs/aijobs/pkg/memstore"
	"github.com/aijobs/aijobs/pkg/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(*testing.T) storetest.Store { return memstore.New() })
}

func TestQuarantineConformance(t *testing.T) {
	storetest.RunQuarantines(t, memstore.NewQuarantines())
}

func TestBucketConformance(t *testing.T) {
	storetest.RunBuckets(t, memstore.NewBuckets())
}

func TestSlotConformance(t *testing.T) {
	storetest.RunSlots(t, memstore.NewSlots())
}

func TestBatchConformance(t *testing.T) {
	storetest.RunBatches(t, memstore.NewBatches())
}

func TestSpendConformance(t *testing.T) { storetest.RunSpend(t, memstore.NewSpend()) }
