package firestoredb

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
// written, and round trips (RPCs).
type Counter struct {
	reads, writes, roundTrips atomic.Int64
	// OnCall, if set, is called with each RPC's method name before the RPC
	// is sent (tests use it to act at a given moment of an operation).
	OnCall func(method string)
}

// Counts is a snapshot of a Counter.
type Counts struct {
	Reads      int64 `json:"reads"`
	Writes     int64 `json:"writes"`
	RoundTrips int64 `json:"roundTrips"`
}

// Sub returns c minus o.
func (c Counts) Sub(o Counts) Counts {
	return Counts{Reads: c.Reads - o.Reads, Writes: c.Writes - o.Writes, RoundTrips: c.RoundTrips - o.RoundTrips}
}

func (c Counts) String() string {
	return fmt.Sprintf("%d reads, %d writes, %d round trips", c.Reads, c.Writes, c.RoundTrips)
}

// Snapshot returns the counts so far.
func (c *Counter) Snapshot() Counts {
	return Counts{Reads: c.reads.Load(), Writes: c.writes.Load(), RoundTrips: c.roundTrips.Load()}
}

func (c *Counter) unary(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	c.roundTrips.Add(1)
	if c.OnCall != nil {
		c.OnCall(method)
	}
	if r, ok := req.(*pb.CommitRequest); ok {
		c.writes.Add(int64(len(r.GetWrites())))
	}
	return invoker(ctx, method, req, reply, cc, opts...)
}

func (c *Counter) stream(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	c.roundTrips.Add(1)
	if c.OnCall != nil {
		c.OnCall(method)
	}
	s, err := streamer(ctx, desc, cc, method, opts...)
	if err != nil {
		return nil, err
	}
	return &countingStream{ClientStream: s, c: c, query: strings.HasSuffix(method, "/RunQuery")}, nil
}

type countingStream struct {
	grpc.ClientStream
	c     *Counter
	query bool
	docs  int64
	done  bool
}

func (s *countingStream) RecvMsg(m any) error {
	err := s.ClientStream.RecvMsg(m)
	if err != nil {
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
	interceptors := []grpc.DialOption{
		grpc.WithChainUnaryInterceptor(counter.unary),
		grpc.WithChainStreamInterceptor(counter.stream),
	}
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
