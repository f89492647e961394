package secrets

import (
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/latchkey/latchkey/internal/activity"
	"github.com/latchkey/latchkey/internal/apierr"
	"github.com/latchkey/latchkey/internal/custody"
	"github.com/latchkey/latchkey/internal/id"
	"github.com/latchkey/latchkey/internal/ops/organizations"
	"github.com/latchkey/latchkey/internal/records"
	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/wire"
)

// Record kinds and lookup keys.
const (
	KindSecret       = "secret"
	KindSecretTarget = "secret_import_target"
	KeySecretName    = "secret.name"
)

// OwnedKinds are the record kinds an organization owns here.
var OwnedKinds = []string{KindSecret, KindSecretTarget}

// Limits (docs/limits.md §8.2).
const (
	// MaxTargetsPerInit bounds the import targets one init_import_secrets makes.
	MaxTargetsPerInit = 100
	// MaxSecretsPerRequest bounds the secrets one import_secrets or export_secrets carries (each
	// is a key agreement and a decryption or an encryption): as many as one init makes targets
	// for.
	MaxSecretsPerRequest = MaxTargetsPerInit
	MaxStaticProperties  = 32
	maxNameLen           = 256
	maxPropertyLen       = 1024
	targetLifetime       = 24 * time.Hour
	suiteEnclaveEncrypt1 = "TRANSPORT_ENCRYPTION_SUITE_ENCLAVE_ENCRYPT_V1"
)

// Secret is one stored secret.
type Secret struct {
	ID               string          `json:"id"`
	OrgID            string          `json:"orgId"`
	Name             string          `json:"name,omitempty"`
	StaticProperties []wire.KeyValue `json:"staticProperties"`
	Sealed           []byte          `json:"sealed"`
	CreatedAt        time.Time       `json:"createdAt"`
}

func (s *Secret) binding() custody.Binding {
	return custody.Binding{OrgID: s.OrgID, Kind: KindSecret, ID: s.ID}
}

// Target is one pending import target; its id is the target public key (uncompressed hex).
type Target struct {
	ID        string    `json:"id"`
	OrgID     string    `json:"orgId"`
	Sealed    []byte    `json:"sealed"`
	CreatedAt time.Time `json:"createdAt"`
}

func targetBinding(orgID, targetPublic string) custody.Binding {
	return custody.Binding{OrgID: orgID, Kind: KindSecretTarget, ID: targetPublic}
}

// Deps are what the operations need.
type Deps struct {
	Custodian *custody.Custodian
}

// Register adds the operations to reg and returns the record kinds the package keeps under an
// organization (they go when a sub-organization is deleted).
func Register(reg *activity.Registry, d Deps) (owned []string) {
	reg.Submit(
		activity.Operation{
			Path:    "init_import_secrets",
			Access:  activity.AccessRoot,
			Execute: activity.On(d.initImport),
		},
	)
	reg.Submit(
		activity.Operation{Path: "import_secrets", Access: activity.AccessRoot, Execute: activity.On(d.importSecrets)},
	)
	reg.Submit(
		activity.Operation{Path: "export_secrets", Access: activity.AccessRoot, Execute: activity.On(d.exportSecrets)},
	)
	reg.Submit(
		activity.Operation{Path: "delete_secrets", Access: activity.AccessRoot, Execute: activity.On(deleteSecrets)},
	)
	reg.Query(activity.QueryOp{Path: "list_secrets", Execute: activity.Query(listSecrets)})
	return OwnedKinds
}

func idx(f string, i int) string { return f + "[" + strconv.Itoa(i) + "]" }

func checkSuite(field string, s wire.TransportEncryptionSuite) error {
	if string(s) != suiteEnclaveEncrypt1 {
		return apierr.Invalid(field, "only %s is supported", suiteEnclaveEncrypt1)
	}
	return nil
}

func (d Deps) initImport(x *activity.Exec, in *wire.InitImportSecretsIntent) (any, error) {
	if err := checkSuite("parameters.encryptionSuite", in.EncryptionSuite); err != nil {
		return nil, err
	}
	if in.NumSecrets < 1 || in.NumSecrets > MaxTargetsPerInit {
		return nil, apierr.Invalid(
			"parameters.numSecrets",
			"must be between 1 and %d, got %d",
			MaxTargetsPerInit,
			in.NumSecrets,
		)
	}
	out := wire.InitImportSecretsResult{EnclaveTargetMessages: make([]string, 0, in.NumSecrets)}
	for range in.NumSecrets {
		bundle, pub, sealed, err := d.Custodian.NewSecretTarget(
			x.OrgID,
			x.Caller.User.ID,
			func(pub string) custody.Binding { return targetBinding(x.OrgID, pub) },
		)
		if err != nil {
			return nil, apierr.Internalf(err, "creating secret import target")
		}
		t := &Target{ID: pub, OrgID: x.OrgID, Sealed: sealed, CreatedAt: x.Now}
		if err := records.Save(x.Ctx, x.Tx, KindSecretTarget, t.ID, t.OrgID, t.CreatedAt, t.CreatedAt, t); err != nil {
			return nil, err
		}
		out.EnclaveTargetMessages = append(out.EnclaveTargetMessages, bundle)
	}
	return out, nil
}

// checkProperties validates static properties: non-empty unique keys, bounded sizes.
func checkProperties(field string, props []wire.KeyValue) ([]wire.KeyValue, error) {
	if len(props) > MaxStaticProperties {
		return nil, apierr.Invalid(field, "at most %d static properties", MaxStaticProperties)
	}
	seen := map[string]bool{}
	out := make([]wire.KeyValue, 0, len(props))
	for i, p := range props {
		f := idx(field, i)
		switch {
		case p.Key == "":
			return nil, apierr.Invalid(f+".key", "is required")
		case len(p.Key) > maxPropertyLen || len(p.Value) > maxPropertyLen:
			return nil, apierr.Invalid(f, "keys and values are at most %d bytes", maxPropertyLen)
		case seen[p.Key]:
			return nil, apierr.Invalid(f+".key", "duplicate key %q", p.Key)
		}
		seen[p.Key] = true
		out = append(out, p)
	}
	return out, nil
}

func (d Deps) importSecrets(x *activity.Exec, in *wire.ImportSecretsIntent) (any, error) {
	const f = "parameters.secrets"
	if len(in.Secrets) == 0 {
		return nil, apierr.Invalid(f, "at least one secret is required")
	}
	if err := organizations.CheckCount(f, len(in.Secrets), MaxSecretsPerRequest, "secrets"); err != nil {
		return nil, err
	}
	out := wire.ImportSecretsResult{SecretIds: make([]string, 0, len(in.Secrets))}
	for i, p := range in.Secrets {
		fi := idx(f, i)
		if err := checkSuite(fi+".encryptionSuite", p.EncryptionSuite); err != nil {
			return nil, err
		}
		name := strings.TrimSpace(p.Name)
		if len(name) > maxNameLen {
			return nil, apierr.Invalid(fi+".name", "at most %d bytes", maxNameLen)
		}
		props, err := checkProperties(fi+".staticProperties", p.StaticProperties)
		if err != nil {
			return nil, err
		}
		pub, err := custody.ParseP256PublicKeyHex(p.TargetPublicKey)
		if err != nil {
			return nil, apierr.Invalid(fi+".targetPublicKey", "%v", err)
		}
		t, err := takeTarget(x, hex.EncodeToString(pub), fi+".targetPublicKey")
		if err != nil {
			return nil, err
		}
		s := &Secret{ID: id.New(), OrgID: x.OrgID, Name: name, StaticProperties: props, CreatedAt: x.Now}
		if s.Sealed, err = d.Custodian.ImportSecret(p.SecretPayload, t.Sealed, targetBinding(t.OrgID, t.ID), s.binding()); err != nil {
			return nil, apierr.Invalid(fi+".secretPayload", "%v", err)
		}
		var keys []store.Key
		if name != "" {
			keys = append(keys, store.Key{Name: KeySecretName, Value: x.OrgID + "/" + name, Unique: true})
		}
		if err := records.Save(x.Ctx, x.Tx, KindSecret, s.ID, s.OrgID, s.CreatedAt, s.CreatedAt, s, keys...); err != nil {
			if apierr.From(err).Code == apierr.AlreadyExists {
				return nil, apierr.New(
					apierr.AlreadyExists,
					"ALREADY_EXISTS",
					"%s.name: a secret named %q already exists",
					fi,
					name,
				)
			}
			return nil, err
		}
		out.SecretIds = append(out.SecretIds, s.ID)
	}
	return out, nil
}

// takeTarget loads and consumes the import target with public key pub (one secret per target).
func takeTarget(x *activity.Exec, pub, field string) (*Target, error) {
	t, err := records.Load[Target](x.Ctx, x.Tx, KindSecretTarget, x.OrgID, pub, "secret import target")
	if err != nil || x.Now.Sub(t.CreatedAt) > targetLifetime {
		return nil, apierr.Invalid(
			field,
			"no pending import target with this public key (call init_import_secrets; each target takes one secret within %s)",
			targetLifetime,
		)
	}
	if err := x.Tx.Delete(x.Ctx, KindSecretTarget, t.ID); err != nil && !errors.Is(err, store.ErrNotFound) {
		return nil, apierr.Internalf(err, "consuming secret import target")
	}
	return t, nil
}

func (d Deps) exportSecrets(x *activity.Exec, in *wire.ExportSecretsIntent) (any, error) {
	const f = "parameters.secrets"
	if len(in.Secrets) == 0 {
		return nil, apierr.Invalid(f, "at least one secret is required")
	}
	if err := organizations.CheckCount(f, len(in.Secrets), MaxSecretsPerRequest, "secrets"); err != nil {
		return nil, err
	}
	out := wire.ExportSecretsResult{SecretPayloads: make([]string, 0, len(in.Secrets))}
	for i, p := range in.Secrets {
		fi := idx(f, i)
		if err := checkSuite(fi+".encryptionSuite", p.EncryptionSuite); err != nil {
			return nil, err
		}
		s, err := records.Load[Secret](x.Ctx, x.Tx, KindSecret, x.OrgID, p.SecretId, "secret")
		if err != nil {
			return nil, err
		}
		payload, err := d.Custodian.ExportSecret(s.Sealed, s.binding(), p.TargetPublicKey, x.OrgID)
		if err != nil {
			var ae *apierr.Error
			if errors.As(err, &ae) {
				return nil, ae
			}
			return nil, apierr.Invalid(fi+".targetPublicKey", "%v", err)
		}
		out.SecretPayloads = append(out.SecretPayloads, payload)
	}
	return out, nil
}

func deleteSecrets(x *activity.Exec, in *wire.DeleteSecretsIntent) (any, error) {
	const f = "parameters.secretIds"
	if len(in.SecretIds) == 0 {
		return nil, apierr.Invalid(f, "at least one secret id is required")
	}
	if err := organizations.CheckIDs(f, in.SecretIds, organizations.MaxIDsPerRequest, "secret ids"); err != nil {
		return nil, err
	}
	for i, sid := range in.SecretIds {
		if _, err := records.Load[Secret](x.Ctx, x.Tx, KindSecret, x.OrgID, sid, "secret"); err != nil {
			return nil, apierr.MissingOr(err, "%s: secret not found: %s", idx(f, i), sid)
		}
		if err := records.Delete(x.Ctx, x.Tx, KindSecret, sid); err != nil {
			return nil, err
		}
	}
	return wire.DeleteSecretsResult{SecretIds: in.SecretIds}, nil
}

func listSecrets(q *activity.Read, in *wire.ListSecretsRequest) (any, error) {
	opts, err := organizations.ListOptions(in.PaginationOptions, "paginationOptions", true)
	if err != nil {
		return nil, err
	}
	// A secret's record holds its sealed payload, which the list does not answer: the page is
	// bounded by the bytes it reads.
	opts.MaxBytes = records.MaxPageBytes
	ss, err := records.List[Secret](q.Ctx, q.R, KindSecret, q.OrgID, opts)
	if err != nil {
		return nil, err
	}
	out := wire.ListSecretsResponse{Secrets: make([]wire.SecretMetadata, 0, len(ss))}
	for _, s := range ss {
		props := s.StaticProperties
		if props == nil {
			props = []wire.KeyValue{}
		}
		out.Secrets = append(out.Secrets, wire.SecretMetadata{SecretId: s.ID, Name: s.Name, StaticProperties: props,
			CreatedAtUnixMs: strconv.FormatInt(s.CreatedAt.UnixMilli(), 10)})
	}
	return out, nil
}
