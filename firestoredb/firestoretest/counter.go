// Package firestoretest holds what tests and the benchmark use to look at
// the Firestore client from outside: a gRPC call counter and a dialer that
// installs it. No production code imports it.
package firestoretest

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync/atomic"

	"cloud.google.com/go/firestore"
	pb "cloud.google.com/go/firestore/apiv1/firestorepb"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// Counter counts what the Firestore client really does, from its gRPC
// traffic: documents read (found or missing, as Firestore bills a lookup of
// a missing document and an empty query as one read each), documents
// written and deleted (billed apart), and round trips (RPCs).
type Counter struct {
	reads, writes, deletes, roundTrips, bytes, largest atomic.Int64
	// OnCall, if set, is called with each RPC's method name before the RPC
	// is sent (tests use it to act at a given moment of an operation).
	OnCall func(method string)
	// Faults, if set, injects network faults into the counted traffic.
	Faults *Faults
	// DialOptions are added to the connection Dial makes (the production
	// client's own interceptors, which tests measure through).
	DialOptions []grpc.DialOption
	spans       spans
}

// Counts is a snapshot of a Counter.
type Counts struct {
	Reads      int64 `json:"reads"`
	Writes     int64 `json:"writes"`  // created, set or updated
	Deletes    int64 `json:"deletes"` // deleted
	RoundTrips int64 `json:"roundTrips"`
	// Bytes is the storage size (by Firestore's rules) of the documents
	// written whole or in part; Largest the largest of them so far.
	Bytes   int64 `json:"bytes"`
	Largest int64 `json:"largest"`
}

// Sub returns c minus o (Largest stays c's).
func (c Counts) Sub(o Counts) Counts {
	return Counts{Reads: c.Reads - o.Reads, Writes: c.Writes - o.Writes, Deletes: c.Deletes - o.Deletes, RoundTrips: c.RoundTrips - o.RoundTrips,
		Bytes: c.Bytes - o.Bytes, Largest: c.Largest}
}

func (c Counts) String() string {
	return fmt.Sprintf("%d reads, %d writes (%d bytes), %d deletes, %d round trips", c.Reads, c.Writes, c.Bytes, c.Deletes, c.RoundTrips)
}

// Snapshot returns the counts so far.
func (c *Counter) Snapshot() Counts {
	return Counts{Reads: c.reads.Load(), Writes: c.writes.Load(), Deletes: c.deletes.Load(), RoundTrips: c.roundTrips.Load(),
		Bytes: c.bytes.Load(), Largest: c.largest.Load()}
}

type countingStream struct {
	grpc.ClientStream
	c        *Counter
	query    bool
	answered func() // the last response came
	docs     int64
	done     bool
}

func (s *countingStream) RecvMsg(m any) error {
	err := s.ClientStream.RecvMsg(m)
	if err != nil {
		s.answered()
		if s.query && !s.done { // an empty query is billed one read
			s.done = true
			if s.docs == 0 {
				s.c.reads.Add(1)
			}
		}
		return err
	}
	switch r := m.(type) {
	case *pb.BatchGetDocumentsResponse:
		if r.GetFound() != nil || r.GetMissing() != "" {
			s.c.reads.Add(1)
		}
	case *pb.RunQueryResponse:
		if r.GetDocument() != nil {
			s.docs++
			s.c.reads.Add(1)
		}
	case *pb.RunAggregationQueryResponse:
		if res := r.GetResult(); res != nil { // billed one read per 1,000 index entries, at least one
			var n int64
			for _, v := range res.GetAggregateFields() {
				n = max(n, v.GetIntegerValue())
			}
			s.c.reads.Add(max(1, (n+999)/1000))
		}
	}
	return nil
}

// ownerCreds is what the emulator expects from a server client: requests
// as "owner" bypass security rules.
type ownerCreds struct{}

func (ownerCreds) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer owner"}, nil
}

func (ownerCreds) RequireTransportSecurity() bool { return false }

// Dial opens a Firestore client for projectID whose traffic counter counts
// (nil counts nothing). It talks to the emulator when FIRESTORE_EMULATOR_HOST
// is set, as the client library does.
func Dial(ctx context.Context, projectID string, counter *Counter, opts ...option.ClientOption) (*firestore.Client, error) {
	if counter == nil {
		return firestore.NewClient(ctx, projectID, opts...)
	}
	interceptors := append([]grpc.DialOption{
		grpc.WithChainUnaryInterceptor(counter.unary),
		grpc.WithChainStreamInterceptor(counter.stream),
	}, counter.DialOptions...)
	if addr := os.Getenv("FIRESTORE_EMULATOR_HOST"); addr != "" {
		conn, err := grpc.NewClient(addr, append(interceptors,
			grpc.WithTransportCredentials(insecure.NewCredentials()),
			grpc.WithPerRPCCredentials(ownerCreds{}))...)
		if err != nil {
			return nil, fmt.Errorf("firestoredb: dial emulator %s: %w", addr, err)
		}
		// Given last, our connection replaces the one the library dials.
		return firestore.NewClient(ctx, projectID, append(opts, option.WithGRPCConn(conn))...)
	}
	for _, o := range interceptors {
		opts = append(opts, option.WithGRPCDialOption(o))
	}
	return firestore.NewClient(ctx, projectID, opts...)
}

func (c *Counter) unary(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	c.roundTrips.Add(1)
	defer c.spans.begin()()
	if c.OnCall != nil {
		c.OnCall(method)
	}
	switch r := req.(type) {
	case *pb.CommitRequest:
		c.countWrites(r.GetWrites())
	case *pb.BatchWriteRequest:
		c.countWrites(r.GetWrites())
	}
	if c.Faults != nil {
		return c.Faults.unary(ctx, method, req, reply, cc, invoker, opts...)
	}
	return invoker(ctx, method, req, reply, cc, opts...)
}

func (c *Counter) countWrites(writes []*pb.Write) {
	for _, w := range writes {
		if w.GetDelete() != "" {
			c.deletes.Add(1)
			continue
		}
		c.writes.Add(1)
		if d := w.GetUpdate(); d != nil {
			n := int64(protoDocSize(d))
			c.bytes.Add(n)
			for old := c.largest.Load(); n > old && !c.largest.CompareAndSwap(old, n); old = c.largest.Load() {
			}
		}
	}
}

func (c *Counter) stream(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	c.roundTrips.Add(1)
	answered := c.spans.begin()
	if c.OnCall != nil {
		c.OnCall(method)
	}
	if c.Faults != nil {
		inner := streamer
		streamer = func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, opts ...grpc.CallOption) (grpc.ClientStream, error) {
			return c.Faults.stream(ctx, desc, cc, method, inner, opts...)
		}
	}
	s, err := streamer(ctx, desc, cc, method, opts...)
	if err != nil {
		answered()
		return nil, err
	}
	return &countingStream{ClientStream: s, c: c, query: strings.HasSuffix(method, "/RunQuery"), answered: answered}, nil
}

// protoDocSize is the storage size of a document as a commit sends it, by
// the same rules as docSize. For an update with a field mask it is the size
// of the fields sent, not of the whole stored document.
func protoDocSize(d *pb.Document) int {
	const root = "/documents/"
	n := 16 + 32
	name := d.GetName()
	if i := strings.Index(name, root); i >= 0 {
		for _, seg := range strings.Split(name[i+len(root):], "/") {
			n += len(seg) + 1
		}
	}
	for k, v := range d.GetFields() {
		n += len(k) + 1 + protoValueSize(v)
	}
	return n
}

func protoValueSize(v *pb.Value) int {
	switch x := v.GetValueType().(type) {
	case *pb.Value_StringValue:
		return len(x.StringValue) + 1
	case *pb.Value_BytesValue:
		return len(x.BytesValue)
	case *pb.Value_ArrayValue:
		n := 0
		for _, e := range x.ArrayValue.GetValues() {
			n += protoValueSize(e)
		}
		return n
	case *pb.Value_MapValue:
		n := 0
		for k, e := range x.MapValue.GetFields() {
			n += len(k) + 1 + protoValueSize(e)
		}
		return n
	case *pb.Value_BooleanValue, *pb.Value_NullValue:
		return 1
	case *pb.Value_GeoPointValue:
		return 16
	case *pb.Value_ReferenceValue:
		return len(x.ReferenceValue) + 1
	}
	return 8 // integers, doubles, timestamps
}
