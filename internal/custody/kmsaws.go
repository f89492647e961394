package custody

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/kms"
)

// AWSKMS wraps and unwraps the master key with a symmetric AWS KMS key, by the KMS Encrypt and
// Decrypt actions through the AWS SDK for Go v2, with the encryption context
// {"latchkey": "master-key"}. The credentials come from the SDK's default chain (AWS_ACCESS_KEY_ID
// and AWS_SECRET_ACCESS_KEY, AWS_PROFILE and the shared files, web identity, ECS or EC2 roles),
// never from Latchkey's flags. The seal record keeps the CiphertextBlob, base64.
type AWSKMS struct {
	// KeyID names the KMS key: a key id, a key ARN, an alias name (alias/latchkey) or an alias ARN.
	KeyID string
	// Region is the key's region; empty: the region of a key ARN, else the SDK's (AWS_REGION,
	// the profile).
	Region string
	// Endpoint, when set, replaces the regional endpoint (a VPC endpoint, an emulator).
	Endpoint string
}

// Type is SealAWSKMS.
func (AWSKMS) Type() string { return SealAWSKMS }

// Locate records the key as given and where it was reached (the endpoint, else the region).
func (a AWSKMS) Locate(rec *SealRecord) {
	rec.Key, rec.Addr = a.KeyID, a.region()
	switch {
	case a.Endpoint != "":
		rec.Addr = a.Endpoint
	case rec.Addr == "":
		rec.Addr = "the AWS SDK's default region"
	}
}

// Check refuses an incomplete AWS KMS configuration (no request is made, no credential read).
func (a AWSKMS) Check() error {
	if a.KeyID == "" || strings.ContainsAny(a.KeyID, " \t\r\n") {
		return errors.New(
			"--awskms-key-id is required: the id, ARN or alias (alias/NAME) of the symmetric KMS key that wraps the master key",
		)
	}
	if a.Endpoint != "" {
		if err := checkEndpoint("--awskms-endpoint", a.Endpoint); err != nil {
			return err
		}
	}
	return nil
}

// region is the configured region, else that of a key or alias ARN (arn:PARTITION:kms:REGION:…).
func (a AWSKMS) region() string {
	if a.Region != "" {
		return a.Region
	}
	if p := strings.SplitN(a.KeyID, ":", 5); len(p) == 5 && p[0] == "arn" && p[2] == "kms" {
		return p[3]
	}
	return ""
}

// client builds a KMS client from the SDK's default configuration chain.
func (a AWSKMS) client(ctx context.Context) (*kms.Client, error) {
	var opts []func(*config.LoadOptions) error
	if r := a.region(); r != "" {
		opts = append(opts, config.WithRegion(r))
	}
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("custody: the AWS configuration: %w", err)
	}
	if cfg.Region == "" {
		return nil, errors.New("custody: no AWS region for the KMS key: give --awskms-region, a key ARN, or AWS_REGION")
	}
	return kms.NewFromConfig(cfg, func(o *kms.Options) {
		if a.Endpoint != "" {
			o.BaseEndpoint = aws.String(a.Endpoint)
		}
	}), nil
}

func awsContext() map[string]string { return map[string]string{kmsContextKey: kmsContextValue} }

// Wrap has KMS encrypt m under the key and returns the ciphertext blob, base64.
func (a AWSKMS) Wrap(ctx context.Context, m *MasterKey) (string, error) {
	ctx, cancel := kmsCall(ctx)
	defer cancel()
	c, err := a.client(ctx)
	if err != nil {
		return "", err
	}
	pt := make([]byte, MasterKeySize)
	copy(pt, m.k[:])
	defer clear(pt)
	out, err := c.Encrypt(
		ctx,
		&kms.EncryptInput{KeyId: aws.String(a.KeyID), Plaintext: pt, EncryptionContext: awsContext()},
	)
	if err != nil {
		return "", fmt.Errorf("custody: AWS KMS encrypt with key %q: %w", a.KeyID, err)
	}
	if len(out.CiphertextBlob) == 0 {
		return "", errors.New("custody: AWS KMS encrypt answered no ciphertext")
	}
	return base64.StdEncoding.EncodeToString(out.CiphertextBlob), nil
}

// Unwrap has KMS decrypt the wrapped master key. The key is named in the request, so a
// ciphertext of another key is refused by KMS (IncorrectKeyException) rather than opened.
func (a AWSKMS) Unwrap(ctx context.Context, ciphertext string) (*MasterKey, error) {
	blob, err := base64.StdEncoding.DecodeString(ciphertext)
	if err != nil || len(blob) == 0 {
		return nil, errors.New("custody: the awskms seal record holds no ciphertext blob")
	}
	ctx, cancel := kmsCall(ctx)
	defer cancel()
	c, err := a.client(ctx)
	if err != nil {
		return nil, err
	}
	out, err := c.Decrypt(
		ctx,
		&kms.DecryptInput{KeyId: aws.String(a.KeyID), CiphertextBlob: blob, EncryptionContext: awsContext()},
	)
	if err != nil {
		return nil, fmt.Errorf("custody: AWS KMS decrypt with key %q: %w", a.KeyID, err)
	}
	return masterKeyFrom(SealAWSKMS, out.Plaintext)
}
