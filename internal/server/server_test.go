package server_test

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/custody"
	"github.com/latchkey/latchkey/internal/server"
	"github.com/latchkey/latchkey/internal/servertest"
)

func TestErrors(t *testing.T) {
	h := servertest.New(t)
	root, _ := h.RootOrg("Acme")
	body := root.SubmitBody("ACTIVITY_TYPE_CREATE_USER_TAG", map[string]any{"userTagName": "x", "userIds": []string{}})
	// A tampered stamp.
	name, value, _ := root.Stamper.Stamp(body)
	tampered := append([]byte{}, body...)
	tampered[len(tampered)-3] = 'y'
	servertest.WantError(
		t,
		h.Post("/public/v1/submit/create_user_tag", tampered, map[string]string{name: value}),
		http.StatusUnauthorized,
		16,
		"invalid stamp",
	)
	// No stamp.
	servertest.WantError(
		t,
		h.Post("/public/v1/submit/create_user_tag", body, nil),
		http.StatusUnauthorized,
		16,
		"not stamped",
	)
	// A stale timestamp.
	stale := []byte(
		strings.Replace(
			string(body),
			strconv.FormatInt(h.Now().UnixMilli(), 10),
			strconv.FormatInt(h.Now().Add(-2*time.Hour).UnixMilli(), 10),
			1,
		),
	)
	servertest.WantError(
		t,
		root.Post("/public/v1/submit/create_user_tag", stale),
		http.StatusBadRequest,
		3,
		"timestampMs",
	)
	// Malformed bodies.
	servertest.WantError(
		t,
		root.Post("/public/v1/submit/create_user_tag", []byte(`{"type":`)),
		http.StatusBadRequest,
		3,
		"malformed JSON",
	)
	servertest.WantError(
		t,
		root.Submit("create_user_tag", "ACTIVITY_TYPE_CREATE_USER_TAG", map[string]any{"userIds": []string{}}),
		http.StatusBadRequest,
		3,
		"parameters.userTagName is required",
	)
	servertest.WantError(
		t,
		root.Submit(
			"create_user_tag",
			"ACTIVITY_TYPE_CREATE_USER_TAG",
			map[string]any{"userTagName": 7, "userIds": []string{}},
		),
		http.StatusBadRequest,
		3,
		"parameters.userTagName",
	)
	servertest.WantError(
		t,
		root.Submit("create_user_tag", "ACTIVITY_TYPE_DELETE_USERS", map[string]any{"userIds": []string{}}),
		http.StatusBadRequest,
		3,
		"type",
	)
	// Unknown and unsupported paths.
	servertest.WantError(
		t,
		root.Submit("no_such_thing", "ACTIVITY_TYPE_X", map[string]any{}),
		http.StatusNotFound,
		5,
		"unknown",
	)
	servertest.WantError(
		t,
		root.Submit("claim_swap_fees", "ACTIVITY_TYPE_CLAIM_SWAP_FEES", map[string]any{}),
		http.StatusNotImplemented,
		12,
		"not supported by Latchkey",
	)
	// A doubled slash (base URL ending in "/") works without a redirect.
	r := root.Post("//public/v1/query/whoami", []byte(`{"organizationId":"`+root.Org+`"}`))
	servertest.MustOK(t, r)
}

func TestConcurrentSubmits(t *testing.T) {
	h := servertest.New(t)
	root, _ := h.RootOrg("Acme")
	var wg sync.WaitGroup
	errs := make(chan string, 40)
	for i := 0; i < 40; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			body := root.SubmitBody(
				"ACTIVITY_TYPE_CREATE_USER_TAG",
				map[string]any{"userTagName": fmt.Sprintf("t%d", i), "userIds": []string{}},
			)
			name, value, _ := root.Stamper.Stamp(body)
			req, _ := http.NewRequest(http.MethodPost, h.URL+"/public/v1/submit/create_user_tag", bytes.NewReader(body))
			req.Header.Set(name, value)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				errs <- err.Error()
				return
			}
			resp.Body.Close()
			if resp.StatusCode != 200 {
				errs <- resp.Status
			}
		}(i)
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	l := root.Query("list_user_tags", nil)
	servertest.MustOK(t, l)
	if n := len(l.Body["userTags"].([]any)); n != 40 {
		t.Fatalf("%d tags, want 40", n)
	}
}

func TestWellKnownKeys(t *testing.T) {
	h := servertest.New(t)
	resp, err := http.Get(h.URL + "/.well-known/latchkey.json")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var pk server.PublicKeys
	if err := json.NewDecoder(resp.Body).Decode(&pk); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{pk.SignerPublicKey, pk.NotarizerPublicKey, pk.OTPPublicKey, pk.AppProofPublicKey} {
		if len(k) != 130 || !strings.HasPrefix(k, "04") || strings.ToLower(k) != k {
			t.Fatalf("public key %q is not lowercase uncompressed hex", k)
		}
	}
	if !reflect.DeepEqual(pk, h.Server.PublicKeys()) {
		t.Fatal("well-known keys differ from the server's")
	}
}

// The master key and every private key stay out of the database file.
func TestNoSecretsInDatabase(t *testing.T) {
	h := servertest.New(t, servertest.SQLite())
	root, _ := h.RootOrg("Acme")
	recvPriv, recvPub := h.NewKey()
	r := root.Submit(
		"create_read_write_session",
		"ACTIVITY_TYPE_CREATE_READ_WRITE_SESSION_V2",
		map[string]any{"targetPublicKey": recvPub},
	)
	servertest.MustOK(t, r)
	bundle := r.Str("activity", "result", "createReadWriteSessionResultV2", "credentialBundle")
	scalar, err := custody.DecryptCredentialBundle(bundle, recvPriv)
	if err != nil {
		t.Fatal(err)
	}
	mk, _ := os.ReadFile(filepath.Join(h.DataDir, "master.key"))
	db := h.DatabaseBytes()
	for name, secret := range map[string]string{"master key": strings.TrimSpace(string(mk)), "session key": hex.EncodeToString(scalar), "root key": root.Priv} {
		if bytes.Contains(db, []byte(secret)) {
			t.Errorf("%s found in the database files", name)
		}
		raw, _ := hex.DecodeString(secret)
		if bytes.Contains(db, raw) {
			t.Errorf("%s (raw bytes) found in the database files", name)
		}
	}
}
