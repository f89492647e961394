package server_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/latchkey/latchkey/internal/servertest"
	"github.com/latchkey/latchkey/internal/tracing"
)

// otlpCollector is an OTLP/HTTP (protobuf) trace receiver on /v1/traces that keeps what it
// is sent.
type otlpCollector struct {
	mu       sync.Mutex
	spans    []*tracepb.Span
	services []string // service.name of each resource received
	url      string
}

// tracedTo starts tracing (tracing.Setup) towards a new in-process OTLP receiver, with every
// other OTEL_* variable cleared; shutdown flushes the spans, and runs anyway when the test ends.
func tracedTo(t testing.TB) (col *otlpCollector, shutdown func(context.Context) error) {
	col = newOTLPCollector(t)
	cleanOTelEnv(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", col.url)
	shutdown, err := tracing.Setup(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = shutdown(context.Background()) })
	return col, shutdown
}

func newOTLPCollector(t testing.TB) *otlpCollector {
	t.Helper()
	c := &otlpCollector{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/traces" {
			http.NotFound(w, r)
			return
		}
		if ct := r.Header.Get("Content-Type"); ct != "application/x-protobuf" {
			http.Error(w, "content type "+ct, http.StatusUnsupportedMediaType)
			return
		}
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var req coltracepb.ExportTraceServiceRequest
		if err := proto.Unmarshal(body, &req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		c.mu.Lock()
		for _, rs := range req.ResourceSpans {
			c.services = append(c.services, attrString(rs.GetResource().GetAttributes(), "service.name"))
			for _, ss := range rs.ScopeSpans {
				c.spans = append(c.spans, ss.Spans...)
			}
		}
		c.mu.Unlock()
		out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(out)
	}))
	t.Cleanup(srv.Close)
	c.url = srv.URL
	return c
}

func (c *otlpCollector) received() ([]*tracepb.Span, []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]*tracepb.Span(nil), c.spans...), append([]string(nil), c.services...)
}

func attrString(attrs []*commonpb.KeyValue, key string) string {
	for _, a := range attrs {
		if a.Key == key {
			return anyString(a.Value)
		}
	}
	return ""
}

// anyString renders an attribute value, for searching it.
func anyString(v *commonpb.AnyValue) string {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_IntValue:
		return fmt.Sprint(x.IntValue)
	case *commonpb.AnyValue_BoolValue:
		return fmt.Sprint(x.BoolValue)
	case *commonpb.AnyValue_DoubleValue:
		return fmt.Sprint(x.DoubleValue)
	case *commonpb.AnyValue_BytesValue:
		return hex.EncodeToString(x.BytesValue)
	case *commonpb.AnyValue_ArrayValue:
		var parts []string
		for _, e := range x.ArrayValue.GetValues() {
			parts = append(parts, anyString(e))
		}
		return strings.Join(parts, ",")
	case *commonpb.AnyValue_KvlistValue:
		var parts []string
		for _, kv := range x.KvlistValue.GetValues() {
			parts = append(parts, kv.Key+"="+anyString(kv.Value))
		}
		return strings.Join(parts, ",")
	}
	return ""
}

// cleanOTelEnv clears the variables a developer's shell may set, so the test sees only its own.
func cleanOTelEnv(t testing.TB) {
	for _, k := range []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_HEADERS",
		"OTEL_EXPORTER_OTLP_TRACES_HEADERS", "OTEL_EXPORTER_OTLP_COMPRESSION", "OTEL_EXPORTER_OTLP_TRACES_COMPRESSION",
		"OTEL_SERVICE_NAME", "OTEL_RESOURCE_ATTRIBUTES", "OTEL_TRACES_SAMPLER", "OTEL_TRACES_SAMPLER_ARG",
		"OTEL_SDK_DISABLED", "OTEL_TRACES_EXPORTER"} {
		t.Setenv(k, "")
	}
}

// TestTracesOverOTLP runs a real sign_raw_payload, stamped and carrying a client's
// traceparent, with OTEL_EXPORTER_OTLP_ENDPOINT pointing at an OTLP/HTTP receiver: the span
// tree arrives intact, continues the client's trace, and carries no body, stamp or key.
func TestTracesOverOTLP(t *testing.T) {
	col, shutdown := tracedTo(t)
	ctx := context.Background()
	if !tracing.Enabled() {
		t.Fatal("OTEL_EXPORTER_OTLP_ENDPOINT is set but tracing is off")
	}

	h := servertest.New(t)
	root, created := h.RootOrg("Acme")
	w := root.Submit(
		"create_wallet",
		"ACTIVITY_TYPE_CREATE_WALLET",
		map[string]any{"walletName": "w", "accounts": servertest.WalletAccounts[:1]},
	)
	servertest.MustOK(t, w)
	addr := w.Str("activity", "result", "createWalletResult", "addresses", "0")

	payload := make([]byte, 32)
	_, _ = rand.Read(payload)
	body := root.SubmitBody(
		"ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2",
		map[string]any{"signWith": addr, "payload": hex.EncodeToString(payload),
			"encoding": "PAYLOAD_ENCODING_HEXADECIMAL", "hashFunction": "HASH_FUNCTION_NO_OP"},
	)
	stampName, stampValue, err := root.Stamper.Stamp(body)
	if err != nil {
		t.Fatal(err)
	}
	traceID, clientSpan := "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	r := h.Post("/public/v1/submit/sign_raw_payload", body, map[string]string{stampName: stampValue,
		"traceparent": "00-" + traceID + "-" + clientSpan + "-01"})
	servertest.MustOK(t, r)
	sig := r.Str(
		"activity",
		"result",
		"signRawPayloadResult",
		"r",
	) + r.Str(
		"activity",
		"result",
		"signRawPayloadResult",
		"s",
	)

	// Shutting down flushes.
	if err := shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if tracing.Enabled() {
		t.Fatal("tracing still on after shutdown")
	}
	spans, services := col.received()
	if len(spans) == 0 {
		t.Fatal("the collector received no spans")
	}
	for _, s := range services {
		if s != tracing.DefaultServiceName {
			t.Fatalf("service.name %q, want %q", s, tracing.DefaultServiceName)
		}
	}

	// The sign request's trace: the client's trace id, and the spans by name.
	byName := map[string][]*tracepb.Span{}
	for _, s := range spans {
		if hex.EncodeToString(s.TraceId) == traceID {
			byName[s.Name] = append(byName[s.Name], s)
		}
	}
	one := func(name string) *tracepb.Span {
		t.Helper()
		if len(byName[name]) != 1 {
			t.Fatalf("%d %q spans in the client's trace, want 1 (spans: %v)", len(byName[name]), name, names(byName))
		}
		return byName[name][0]
	}
	req := one("POST /public/v1/submit/sign_raw_payload")
	store := one("store.transaction")
	pol := one("policy.evaluate")
	sign := one("sign")
	id := func(s *tracepb.Span) string { return hex.EncodeToString(s.SpanId) }
	parent := func(s *tracepb.Span) string { return hex.EncodeToString(s.ParentSpanId) }
	if parent(req) != clientSpan {
		t.Fatalf("request span's parent %s, want the client's traceparent span %s", parent(req), clientSpan)
	}
	if req.Kind != tracepb.Span_SPAN_KIND_SERVER {
		t.Fatalf("request span kind %v", req.Kind)
	}
	if parent(store) != id(req) || parent(sign) != id(req) {
		t.Fatalf(
			"store (parent %s) and sign (parent %s) spans are not children of the request span %s",
			parent(store),
			parent(sign),
			id(req),
		)
	}
	if parent(pol) != id(store) {
		t.Fatalf("policy span's parent %s, want the store transaction %s", parent(pol), id(store))
	}
	for k, want := range map[string]string{"latchkey.operation": "submit/sign_raw_payload", "latchkey.organization_id": created.OrganizationID,
		"latchkey.activity_type": "ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2", "http.response.status_code": "200", "http.request.method": "POST"} {
		if got := attrString(req.Attributes, k); got != want {
			t.Errorf("request span %s = %q, want %q", k, got, want)
		}
	}
	if got := attrString(pol.Attributes, "latchkey.policy.outcome"); got != "OUTCOME_ALLOW" {
		t.Errorf("policy outcome %q", got)
	}
	if got := attrString(store.Attributes, "latchkey.store.outcome"); got != "committed" {
		t.Errorf("store outcome %q", got)
	}
	if got := attrString(sign.Attributes, "latchkey.sign.curve"); got != "CURVE_SECP256K1" {
		t.Errorf("sign curve %q", got)
	}

	// Nothing secret or client-written in any span: attributes, events, links, status.
	secrets := map[string]string{
		"request body":    string(body),
		"stamp":           stampValue,
		"payload":         hex.EncodeToString(payload),
		"signature":       sig,
		"API private key": root.Priv,
		"API public key":  root.Pub,
	}
	for _, s := range spans {
		var vals []string
		for _, a := range s.Attributes {
			vals = append(vals, anyString(a.Value))
		}
		for _, e := range s.Events {
			vals = append(vals, e.Name)
			for _, a := range e.Attributes {
				vals = append(vals, anyString(a.Value))
			}
		}
		vals = append(vals, s.GetStatus().GetMessage())
		for _, v := range vals {
			for what, secret := range secrets {
				if secret != "" && strings.Contains(strings.ToLower(v), strings.ToLower(secret)) {
					t.Errorf("span %q carries the %s: %q", s.Name, what, v)
				}
			}
			if strings.Contains(v, `"parameters"`) {
				t.Errorf("span %q carries JSON of the request: %q", s.Name, v)
			}
		}
	}
}

func names(m map[string][]*tracepb.Span) []string {
	var out []string
	for k, v := range m {
		out = append(out, fmt.Sprintf("%s×%d", k, len(v)))
	}
	return out
}

// TestTracedErrorsCarryCodes: a refused request's span is an error whose status is the code,
// not the message (which quotes the request).
func TestTracedErrorsCarryCodes(t *testing.T) {
	col := newOTLPCollector(t)
	cleanOTelEnv(t)
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", col.url+"/v1/traces")
	ctx := context.Background()
	shutdown, err := tracing.Setup(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = shutdown(ctx) })
	h := servertest.New(t)
	root, _ := h.RootOrg("Acme")
	marker := "0xfeedfacefeedfacefeedfacefeedfacefeedface"
	r := root.Submit(
		"sign_raw_payload",
		"ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2",
		map[string]any{"signWith": marker, "payload": "00",
			"encoding": "PAYLOAD_ENCODING_HEXADECIMAL", "hashFunction": "HASH_FUNCTION_NO_OP"},
	)
	if r.Status == http.StatusOK {
		t.Fatalf("signing with an unknown key succeeded: %s", r.Raw)
	}
	if err := shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	spans, _ := col.received()
	var req *tracepb.Span
	for _, s := range spans {
		if s.Name == "POST /public/v1/submit/sign_raw_payload" {
			req = s
		}
		for _, a := range s.Attributes {
			if strings.Contains(anyString(a.Value), marker) {
				t.Errorf("span %q attribute %s quotes the request: %q", s.Name, a.Key, anyString(a.Value))
			}
		}
		if strings.Contains(s.GetStatus().GetMessage(), marker) {
			t.Errorf("span %q status quotes the request: %q", s.Name, s.GetStatus().GetMessage())
		}
	}
	if req == nil {
		t.Fatal("no request span")
	}
	if req.GetStatus().GetCode() != tracepb.Status_STATUS_CODE_ERROR {
		t.Fatalf("refused request's span status %v", req.GetStatus())
	}
	if got := attrString(req.Attributes, "http.response.status_code"); got != fmt.Sprint(r.Status) {
		t.Fatalf("status code attribute %q, servertest.Response %d", got, r.Status)
	}
}

// BenchmarkSignRawPayloadTraced is BenchmarkSignRawPayload with tracing on, every request
// sampled and exported to an in-process OTLP receiver: the cost of tracing when configured.
func BenchmarkSignRawPayloadTraced(b *testing.B) {
	tracedTo(b)
	benchSignRawPayload(b)
}

// TestTracedDenialAndVote: a refused activity shows its rolled-back transaction, the policy's
// denial and the transaction that records the failure; an approval shows the vote's
// transaction holding the re-evaluation.
func TestTracedDenialAndVote(t *testing.T) {
	col, shutdown := tracedTo(t)
	ctx := context.Background()

	h := servertest.New(t)
	root, created := h.RootOrg("Acme")
	aliceID, alice := h.NewUser(root, "alice", "alice@example.com")
	// Alice is not a root user yet: nothing allows her to create a wallet.
	servertest.WantError(
		t,
		alice.Submit(
			"create_wallet",
			"ACTIVITY_TYPE_CREATE_WALLET",
			map[string]any{"walletName": "mine", "accounts": servertest.WalletAccounts[:1]},
		),
		http.StatusForbidden,
		7,
		"denied request implicitly",
	)
	servertest.MustOK(
		t,
		root.Submit(
			"update_root_quorum",
			"ACTIVITY_TYPE_UPDATE_ROOT_QUORUM",
			map[string]any{"threshold": 2, "userIds": []string{created.UserID, aliceID}},
		),
	)
	r := root.Submit(
		"create_user_tag",
		"ACTIVITY_TYPE_CREATE_USER_TAG",
		map[string]any{"userTagName": "needs two", "userIds": []string{}},
	)
	if r.Str("activity", "status") != "ACTIVITY_STATUS_CONSENSUS_NEEDED" {
		t.Fatalf("want CONSENSUS_NEEDED: %s", r.Raw)
	}
	servertest.MustOK(
		t,
		alice.Submit(
			"approve_activity",
			"ACTIVITY_TYPE_APPROVE_ACTIVITY",
			map[string]any{"fingerprint": r.Str("activity", "fingerprint")},
		),
	)
	if err := shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	spans, _ := col.received()
	byTrace := map[string][]*tracepb.Span{}
	for _, s := range spans {
		byTrace[hex.EncodeToString(s.TraceId)] = append(byTrace[hex.EncodeToString(s.TraceId)], s)
	}
	// trace returns the spans of the one request whose server span is named name and whose
	// activity type is typ.
	trace := func(name, typ string) []*tracepb.Span {
		t.Helper()
		var found []*tracepb.Span
		for _, ss := range byTrace {
			for _, s := range ss {
				if s.Name == name && attrString(s.Attributes, "latchkey.activity_type") == typ {
					if found != nil {
						t.Fatalf("two %s %s traces", name, typ)
					}
					found = ss
				}
			}
		}
		if found == nil {
			t.Fatalf("no %s %s trace", name, typ)
		}
		return found
	}
	// children lists "name(purpose or outcome)" of the spans whose parent is p, sorted.
	label := func(s *tracepb.Span) string {
		for _, k := range []string{"latchkey.store.purpose", "latchkey.policy.outcome"} {
			if v := attrString(s.Attributes, k); v != "" {
				return s.Name + "(" + v + ")"
			}
		}
		return s.Name
	}
	children := func(ss []*tracepb.Span, p *tracepb.Span) string {
		var out []string
		for _, s := range ss {
			if string(s.ParentSpanId) == string(p.SpanId) {
				out = append(out, label(s))
			}
		}
		sort.Strings(out)
		return strings.Join(out, " ")
	}
	find := func(ss []*tracepb.Span, l string) *tracepb.Span {
		t.Helper()
		for _, s := range ss {
			if label(s) == l {
				return s
			}
		}
		t.Fatalf("no span %s", l)
		return nil
	}

	denied := trace("POST /public/v1/submit/create_wallet", "ACTIVITY_TYPE_CREATE_WALLET")
	req := find(denied, "POST /public/v1/submit/create_wallet")
	if got := children(denied, req); got != "store.transaction(activity) store.transaction(failed_activity)" {
		t.Fatalf("denied request's children: %s", got)
	}
	undone := find(denied, "store.transaction(activity)")
	if got := children(denied, undone); got != "policy.evaluate(OUTCOME_DENY_IMPLICIT)" {
		t.Fatalf("denied transaction's children: %s", got)
	}
	if attrString(undone.Attributes, "latchkey.store.outcome") != "rolled_back" {
		t.Fatalf("denied transaction outcome %q", attrString(undone.Attributes, "latchkey.store.outcome"))
	}
	if st := req.GetStatus(); st.GetCode() != tracepb.Status_STATUS_CODE_ERROR || st.GetMessage() == "" ||
		st.GetMessage() != attrString(
			req.Attributes,
			"latchkey.error.turnkey_code",
		) || attrString(req.Attributes, "latchkey.error.code") != "7" {
		t.Fatalf("denied request status %v, attributes %v", st, req.Attributes)
	}

	waiting := trace("POST /public/v1/submit/create_user_tag", "ACTIVITY_TYPE_CREATE_USER_TAG")
	if got := children(waiting, find(waiting, "store.transaction(activity)")); got != "policy.evaluate(OUTCOME_REQUIRES_CONSENSUS)" {
		t.Fatalf("consensus transaction's children: %s", got)
	}
	vote := trace("POST /public/v1/submit/approve_activity", "ACTIVITY_TYPE_APPROVE_ACTIVITY")
	if got := children(vote, find(vote, "POST /public/v1/submit/approve_activity")); got != "store.transaction(vote)" {
		t.Fatalf("approval's children: %s", got)
	}
	if got := children(vote, find(vote, "store.transaction(vote)")); got != "policy.evaluate(OUTCOME_ALLOW)" {
		t.Fatalf("vote transaction's children: %s", got)
	}
}
