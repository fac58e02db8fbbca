// Package store is the contract between the runtime (package backend) and durable storage.
//
// The runtime keeps live state in memory and treats a Store as the record of truth: a change
// becomes observable only after the store committed it. Everything a second implementation
// needs is here — the records and their JSON form, the atomic unit of change (Batch), the
// interface, the errors it must return, and the optional Cluster interface of stores shared by
// several nodes — so an implementation never has to import the runtime. Implementations live
// in subpackages (bolt: one bbolt file; postgres) and prove themselves with storetest.Run.
//
// This package imports only sdk/api and the standard library.
package store
