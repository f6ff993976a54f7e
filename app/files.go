package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"

	"cloud.google.com/go/storage"
	"google.golang.org/api/googleapi"

	"github.com/chatmemory/backend/attachments"
	"github.com/chatmemory/backend/gcsblob"
	"github.com/chatmemory/backend/inprocdb"
)

// openBlobs is where attachments' bytes live as cfg says: in this process
// with the in-process store; in Cloud Storage with Firestore (the
// emulator's with STORAGE_EMULATOR_HOST, whose bucket is made if it is
// missing). nil (attachments off, announced) with Firestore on an emulator
// but no Cloud Storage emulator.
func openBlobs(ctx context.Context, cfg Config, log *slog.Logger) (attachments.Blobs, []func() error, error) {
	if cfg.Backend == "inprocess" {
		return inprocdb.NewBlobs(), nil, nil
	}
	if cfg.StorageEmulator == "" && !cfg.OnGoogleCloud {
		log.Warn("ATTACHMENTS OFF: STORAGE_EMULATOR_HOST is not set (make dev starts a Cloud Storage emulator); the attachment routes answer 404")
		return nil, nil, nil
	}
	// JSON reads: the same API the emulator serves, in production too.
	client, err := storage.NewClient(ctx, storage.WithJSONReads())
	if err != nil {
		return nil, nil, fmt.Errorf("cloud storage: %w", err)
	}
	if cfg.StorageEmulator != "" {
		if err := makeBucket(ctx, client, cfg); err != nil {
			client.Close()
			return nil, nil, err
		}
	}
	return gcsblob.New(client, cfg.StorageBucket), []func() error{client.Close}, nil
}

// makeBucket makes the emulator's bucket unless it is there.
func makeBucket(ctx context.Context, client *storage.Client, cfg Config) error {
	err := client.Bucket(cfg.StorageBucket).Create(ctx, cfg.ProjectID, nil)
	var ge *googleapi.Error
	if err == nil || errors.As(err, &ge) && ge.Code == http.StatusConflict {
		return nil
	}
	return fmt.Errorf("cloud storage emulator on %s: bucket %s: %w", cfg.StorageEmulator, cfg.StorageBucket, err)
}

// files is the attachments' service over d's store and blobs, nil without
// blobs.
func files(cfg Config, d Deps) *attachments.Service {
	if d.Blobs == nil {
		return nil
	}
	return &attachments.Service{Store: d.Store, Blobs: d.Blobs, MaxBytes: cfg.MaxAttachmentBytes, Quota: cfg.AttachmentQuota,
		PerMinute: cfg.UploadsPerMinute, Now: d.Now, Log: d.Log}
}
