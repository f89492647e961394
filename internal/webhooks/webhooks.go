package webhooks

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/latchkey/latchkey/internal/activity"
	"github.com/latchkey/latchkey/internal/apierr"
	"github.com/latchkey/latchkey/internal/custody"
	"github.com/latchkey/latchkey/internal/directory"
	"github.com/latchkey/latchkey/internal/hot"
	"github.com/latchkey/latchkey/internal/id"
	"github.com/latchkey/latchkey/internal/records"
	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/wire"
)

// Record kinds.
const (
	KindEndpoint = "webhook_endpoint"
	KindDelivery = "webhook_delivery"
	// outboxOwner is the store owner of every delivery, so one listing finds them in order.
	outboxOwner = "webhook-outbox"
	// Event types (Turnkey's): activity status changes, organization-scoped (a parent's endpoints
	// receive its sub-organizations' too); send status changes and balance changes, scoped to the
	// top-level ("billing") organization.
	EventActivityUpdates   = "ACTIVITY_UPDATES"
	EventSendStatusUpdates = "SEND_TRANSACTION_STATUS_UPDATES"
	EventBalanceConfirmed  = "BALANCE_CONFIRMED_UPDATES"
	EventBalanceFinalized  = "BALANCE_FINALIZED_UPDATES"
	// MaxEndpoints bounds an organization's endpoints.
	MaxEndpoints = 20
	// MaxSubscriptionsPerEndpoint bounds the subscriptions create_webhook_endpoint lists
	// (docs/limits.md §8.2): there are four event types, each listed once in a real request.
	MaxSubscriptionsPerEndpoint = 32
	// MaxURLBytes bounds an endpoint's URL. An endpoint is read for every activity of its
	// organization (and of its sub-organizations) and its URL copied into every delivery, so
	// what it holds is bounded, not only what one request carries; real webhook URLs are under
	// 200 bytes, and 2 KiB is what every HTTP client and proxy accepts. Its name is bounded as
	// any name (directory.MaxNameLength).
	MaxURLBytes = 2 << 10
)

// Endpoint is a subscribed URL.
type Endpoint struct {
	ID        string    `json:"id"`
	OrgID     string    `json:"orgId"`
	Name      string    `json:"name"`
	URL       string    `json:"url"`
	Active    bool      `json:"active"`
	Events    []string  `json:"events"`
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
}

// KeyBalanceEndpoint marks the active endpoints subscribed to balance updates: the balance
// follower asks the nodes for nothing while no endpoint carries it.
const KeyBalanceEndpoint = "webhook_endpoint.balance"

func (e *Endpoint) keys() []store.Key {
	if e.Active &&
		(slices.Contains(e.Events, EventBalanceConfirmed) || slices.Contains(e.Events, EventBalanceFinalized)) {
		return []store.Key{{Name: KeyBalanceEndpoint, Value: "1"}}
	}
	return nil
}

func (e *Endpoint) toWire() wire.WebhookEndpointData {
	subs := make([]wire.WebhookSubscriptionParams, 0, len(e.Events))
	for _, ev := range e.Events {
		t := true
		subs = append(subs, wire.WebhookSubscriptionParams{EventType: ev, IsActive: &t})
	}
	return wire.WebhookEndpointData{
		EndpointId:     e.ID,
		OrganizationId: e.OrgID,
		Url:            e.URL,
		Name:           e.Name,
		IsActive:       e.Active,
		Subscriptions:  subs,
	}
}

// Delivery is one pending event for one endpoint. Its id is the X-Turnkey-Event-Id header,
// stable across retries; OrgID is the endpoint's organization (X-Turnkey-Organization-Id).
type Delivery struct {
	ID          string          `json:"id"`
	OrgID       string          `json:"orgId"`
	EventType   string          `json:"eventType,omitempty"` // "" in records written before event types: ACTIVITY_UPDATES
	EndpointID  string          `json:"endpointId"`
	URL         string          `json:"url"`
	Body        json.RawMessage `json:"body"`
	Attempts    int             `json:"attempts"`
	NextAttempt time.Time       `json:"nextAttempt"`
	LeaseUntil  time.Time       `json:"leaseUntil"`
	LastError   string          `json:"lastError,omitempty"`
	CreatedAt   time.Time       `json:"createdAt"`
}

// Deps are the dependencies of the endpoint operations.
type Deps struct {
	// AllowLoopback admits endpoint URLs on loopback addresses (development).
	AllowLoopback bool
	// Networks, when set, lists the networks that have a chain provider (balance updates
	// need one).
	Networks func() []string
}

// Register adds the endpoint operations to reg and returns the record kinds the package keeps
// under an organization (they go when a sub-organization is deleted).
func Register(reg *activity.Registry, d Deps) (owned []string) {
	reg.Submit(
		activity.Operation{
			Path:    "create_webhook_endpoint",
			Access:  activity.AccessRoot,
			Execute: activity.On(createEndpoint(d.AllowLoopback, d.Networks)),
		},
	)
	reg.Submit(
		activity.Operation{
			Path:    "update_webhook_endpoint",
			Access:  activity.AccessRoot,
			Execute: activity.On(updateEndpoint(d.AllowLoopback)),
		},
	)
	reg.Submit(
		activity.Operation{
			Path:    "delete_webhook_endpoint",
			Access:  activity.AccessRoot,
			Execute: activity.On(deleteEndpoint),
		},
	)
	reg.Query(activity.QueryOp{Path: "list_webhook_endpoints", Execute: activity.Query(listEndpoints)})
	return []string{KindEndpoint}
}

func checkURL(field, raw string, allowLoopback bool) error {
	if len(raw) > MaxURLBytes {
		return apierr.Invalid(field, "must be at most %d bytes", MaxURLBytes)
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return apierr.Invalid(field, "not an absolute URL: %q", raw)
	}
	switch {
	case u.Scheme == "https":
	case u.Scheme == "http" && allowLoopback && (u.Hostname() == "127.0.0.1" || u.Hostname() == "localhost" || u.Hostname() == "::1"):
	default:
		return apierr.Invalid(field, "webhook URLs must be https (plain http only for loopback with --dev)")
	}
	return nil
}

// checkEvent refuses an event type Latchkey does not emit, a billing-scoped one subscribed from a
// sub-organization (as Turnkey does), and balance updates when no network has a provider
// (networks lists those that have one).
func checkEvent(o *directory.Organization, field, event string, networks func() []string) error {
	switch event {
	case EventActivityUpdates:
		return nil
	case EventSendStatusUpdates, EventBalanceConfirmed, EventBalanceFinalized:
		if o.ParentID != "" {
			return apierr.New(
				apierr.PermissionDenied,
				"PERMISSION_DENIED",
				"%s: %s endpoints are managed from the top-level (billing) organization, not a sub-organization",
				field,
				event,
			)
		}
		if event != EventSendStatusUpdates && (networks == nil || len(networks()) == 0) {
			return apierr.Invalid(
				field,
				"%s needs a chain provider: this server has no --chain-rpc, so no balances can be followed",
				event,
			)
		}
		return nil
	}
	return apierr.Invalid(
		field,
		"unknown event type %q (ACTIVITY_UPDATES, SEND_TRANSACTION_STATUS_UPDATES, BALANCE_CONFIRMED_UPDATES or BALANCE_FINALIZED_UPDATES)",
		event,
	)
}

func createEndpoint(
	allowLoopback bool,
	networks func() []string,
) func(x *activity.Exec, in *wire.CreateWebhookEndpointIntent) (any, error) {
	return func(x *activity.Exec, in *wire.CreateWebhookEndpointIntent) (any, error) {
		if n := len(in.Subscriptions); n > MaxSubscriptionsPerEndpoint {
			return nil, apierr.Invalid("parameters.subscriptions", "%d subscriptions, at most %d in one request", n,
				MaxSubscriptionsPerEndpoint)
		}
		if err := checkURL("parameters.url", in.Url, allowLoopback); err != nil {
			return nil, err
		}
		name, err := directory.CheckName("parameters.name", in.Name)
		if err != nil {
			return nil, err
		}
		o, err := directory.LoadOrganization(x.Ctx, x.Tx, x.OrgID)
		if err != nil {
			return nil, err
		}
		events := []string{}
		for i, s := range in.Subscriptions {
			if err := checkEvent(o, fmt.Sprintf("parameters.subscriptions[%d].eventType", i), s.EventType, networks); err != nil {
				return nil, err
			}
			if (s.IsActive == nil || *s.IsActive) && !slices.Contains(events, s.EventType) {
				events = append(events, s.EventType)
			}
		}
		if len(in.Subscriptions) == 0 {
			events = []string{EventActivityUpdates}
		}
		if o.WebhookEndpoints >= MaxEndpoints {
			return nil, apierr.New(
				apierr.ResourceExhausted,
				"RESOURCE_EXHAUSTED",
				"an organization can have at most %d webhook endpoints",
				MaxEndpoints,
			)
		}
		e := &Endpoint{
			ID:        id.New(),
			OrgID:     x.OrgID,
			Name:      name,
			URL:       in.Url,
			Active:    true,
			Events:    events,
			CreatedAt: x.Now,
			UpdatedAt: x.Now,
		}
		if err := records.Save(x.Ctx, x.Tx, KindEndpoint, e.ID, e.OrgID, e.CreatedAt, e.UpdatedAt, e, e.keys()...); err != nil {
			return nil, err
		}
		o.WebhookEndpoints++
		if err := directory.SaveOrganization(x.Ctx, x.Tx, o); err != nil {
			return nil, err
		}
		return wire.CreateWebhookEndpointResult{EndpointId: e.ID, WebhookEndpoint: e.toWire()}, nil
	}
}

func updateEndpoint(allowLoopback bool) func(x *activity.Exec, in *wire.UpdateWebhookEndpointIntent) (any, error) {
	return func(x *activity.Exec, in *wire.UpdateWebhookEndpointIntent) (any, error) {
		e, err := records.Load[Endpoint](x.Ctx, x.Tx, KindEndpoint, x.OrgID, in.EndpointId, "webhook endpoint")
		if err != nil {
			return nil, err
		}
		if in.Url != "" {
			if err := checkURL("parameters.url", in.Url, allowLoopback); err != nil {
				return nil, err
			}
			e.URL = in.Url
		}
		if in.Name != "" {
			if e.Name, err = directory.CheckName("parameters.name", in.Name); err != nil {
				return nil, err
			}
		}
		if in.IsActive != nil {
			e.Active = *in.IsActive
		}
		e.UpdatedAt = x.Now
		if err := records.Save(x.Ctx, x.Tx, KindEndpoint, e.ID, e.OrgID, e.CreatedAt, e.UpdatedAt, e, e.keys()...); err != nil {
			return nil, err
		}
		return wire.UpdateWebhookEndpointResult{EndpointId: e.ID, WebhookEndpoint: e.toWire()}, nil
	}
}

func deleteEndpoint(x *activity.Exec, in *wire.DeleteWebhookEndpointIntent) (any, error) {
	if _, err := records.Load[Endpoint](x.Ctx, x.Tx, KindEndpoint, x.OrgID, in.EndpointId, "webhook endpoint"); err != nil {
		return nil, err
	}
	if err := records.Delete(x.Ctx, x.Tx, KindEndpoint, in.EndpointId); err != nil {
		return nil, err
	}
	o, err := directory.LoadOrganization(x.Ctx, x.Tx, x.OrgID)
	if err != nil {
		return nil, err
	}
	if o.WebhookEndpoints > 0 {
		o.WebhookEndpoints--
	}
	if err := directory.SaveOrganization(x.Ctx, x.Tx, o); err != nil {
		return nil, err
	}
	return wire.DeleteWebhookEndpointResult{EndpointId: in.EndpointId}, nil
}

func listEndpoints(q *activity.Read, _ *wire.ListWebhookEndpointsRequest) (any, error) {
	es, err := records.List[Endpoint](q.Ctx, q.R, KindEndpoint, q.OrgID, store.ListOptions{})
	if err != nil {
		return nil, err
	}
	out := wire.ListWebhookEndpointsResponse{WebhookEndpoints: make([]wire.WebhookEndpointData, 0, len(es))}
	for _, e := range es {
		out.WebhookEndpoints = append(out.WebhookEndpoints, e.toWire())
	}
	return out, nil
}

// Parents holds the parent organizations Enqueuer reads for sub-organizations' activities
// (package hot). Shared: nothing modifies them.
type Parents = hot.Cache[*directory.Organization]

// NewParents returns an empty cache over v.
func NewParents(v *hot.Versions) *Parents { return hot.NewCache[*directory.Organization](v, 0) }

// Enqueuer returns the engine's OnActivity: it writes one ACTIVITY_UPDATES delivery of the
// activity per active endpoint of org and, for a sub-organization, of its parent (Turnkey:
// "parent-owned endpoints receive events for the parent and all sub-organizations"), in the
// activity's transaction. The body is the activity itself, as get_activity returns it.
// Organizations without endpoints cost nothing more. The parent is read through c
// (hot.Cache.LoadInTx: exact on SQLite, as of the request's arrival on PostgreSQL), not in
// every sub-organization activity's transaction.
func Enqueuer(
	c *Parents,
) func(ctx context.Context, tx store.Tx, org *directory.Organization, now time.Time, activityJSON []byte) error {
	return func(ctx context.Context, tx store.Tx, org *directory.Organization, now time.Time, activityJSON []byte) error {
		if org == nil {
			return nil
		}
		owners := []*directory.Organization{org}
		if org.ParentID != "" {
			parent, err := c.LoadInTx(ctx, org.ParentID, org.ParentID, func() (*directory.Organization, error) {
				return directory.LoadOrganization(ctx, tx, org.ParentID)
			})
			if err != nil {
				return err
			}
			owners = append(owners, parent)
		}
		for _, o := range owners {
			if err := EnqueueEvent(ctx, tx, o, EventActivityUpdates, now, activityJSON); err != nil {
				return err
			}
		}
		return nil
	}
}

// EnqueueEvent writes one delivery of body per active endpoint of owner subscribed to event, in
// the caller's transaction.
func EnqueueEvent(
	ctx context.Context,
	tx store.Tx,
	owner *directory.Organization,
	event string,
	now time.Time,
	body []byte,
) error {
	if owner == nil || owner.WebhookEndpoints == 0 {
		return nil
	}
	es, err := records.List[Endpoint](ctx, tx, KindEndpoint, owner.ID, store.ListOptions{})
	if err != nil {
		return err
	}
	for _, e := range es {
		if !e.Active || !slices.Contains(e.Events, event) {
			continue
		}
		d := &Delivery{
			ID:          id.New(),
			OrgID:       owner.ID,
			EventType:   event,
			EndpointID:  e.ID,
			URL:         e.URL,
			NextAttempt: now,
			CreatedAt:   now,
			Body:        body,
		}
		if err := records.Save(ctx, tx, KindDelivery, d.ID, outboxOwner, now, now, d); err != nil {
			return err
		}
		enqueued.Add(1)
	}
	return nil
}

// enqueued counts the deliveries written in this process (their transactions may still have
// been undone): Wake does nothing unless it moved since the deliverer last looked, so the
// activities of organizations without endpoints, nearly all of them, cost the outbox nothing.
var enqueued atomic.Uint64

// Deliverer drains the outbox.
type Deliverer struct {
	Store  store.Store
	Keys   *custody.ServerKeys
	Client *http.Client
	Log    *slog.Logger
	Now    func() time.Time
	// Poll is how often the outbox is checked when idle.
	Poll time.Duration
	// MaxAttempts bounds retries of one delivery.
	MaxAttempts int
	// Backlog, when set, is told how many deliveries wait after each round; Failed of each failed
	// attempt (metrics).
	Backlog func(n int)
	Failed  func()
	wake    chan struct{}
	seen    atomic.Uint64 // enqueued as the last round began
}

// Wake asks the deliverer to look at the outbox now, if a delivery was written since it last
// looked (Committed calls it after every activity).
func (d *Deliverer) Wake() {
	if d.wake == nil || enqueued.Load() == d.seen.Load() {
		return
	}
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// Prepare makes Wake usable; call before Run.
func (d *Deliverer) Prepare() { d.wake = make(chan struct{}, 1) }

// Run delivers until ctx ends; a delivery in flight when ctx ends is finished first.
func (d *Deliverer) Run(ctx context.Context) {
	if d.Poll == 0 {
		d.Poll = 250 * time.Millisecond
	}
	if d.MaxAttempts == 0 {
		d.MaxAttempts = 20
	}
	if d.Now == nil {
		d.Now = func() time.Time { return time.Now().UTC() }
	}
	if d.wake == nil {
		d.Prepare()
	}
	t := time.NewTicker(d.Poll)
	defer t.Stop()
	for {
		for n := d.round(); n > 0 && ctx.Err() == nil; n = d.round() {
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-d.wake:
		}
	}
}

// round leases up to a batch of due deliveries, sends them, and records the outcomes; it
// returns how many it sent.
func (d *Deliverer) round() int {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	d.seen.Store(enqueued.Load())
	// Look before taking the writer: an empty outbox (the usual case) costs a read, not a write
	// transaction. Deliveries written by another process are found here too.
	var waiting []store.Record
	if err := d.Store.View(ctx, func(r store.Reader) (err error) {
		waiting, err = r.List(ctx, KindDelivery, outboxOwner, store.ListOptions{Limit: 1})
		return err
	}); err != nil {
		d.Log.Warn("webhook outbox", "err", err)
		return 0
	}
	if len(waiting) == 0 {
		if d.Backlog != nil {
			d.Backlog(0)
		}
		return 0
	}
	var due []*Delivery
	err := d.Store.Update(ctx, func(tx store.Tx) error {
		due = due[:0]
		// Leases are timed by the database's clock when it has one: another process's clock
		// may be ahead and take over a delivery still being sent.
		now, err := store.Now(ctx, tx, d.Now)
		if err != nil {
			return err
		}
		ds, err := records.List[Delivery](ctx, tx, KindDelivery, outboxOwner, store.ListOptions{Limit: 200})
		if err != nil {
			return err
		}
		if d.Backlog != nil {
			d.Backlog(len(ds))
		}
		for _, dl := range ds {
			if len(due) >= 32 || dl.NextAttempt.After(now) || dl.LeaseUntil.After(now) {
				continue
			}
			if _, err := tx.Get(ctx, KindDelivery, dl.ID); err != nil { // lock it
				continue
			}
			dl.LeaseUntil = now.Add(30 * time.Second)
			dl.Attempts++
			if err := records.Save(ctx, tx, KindDelivery, dl.ID, outboxOwner, dl.CreatedAt, now, dl); err != nil {
				return err
			}
			due = append(due, dl)
		}
		return nil
	})
	if err != nil {
		d.Log.Warn("webhook outbox", "err", err)
		return 0
	}
	for _, dl := range due {
		err := d.send(ctx, dl)
		if err != nil && d.Failed != nil {
			d.Failed()
		}
		if uerr := d.Store.Update(ctx, func(tx store.Tx) error {
			if err == nil || dl.Attempts >= d.MaxAttempts {
				if err != nil {
					d.Log.Warn("webhook delivery abandoned", "delivery", dl.ID, "endpoint", dl.EndpointID, "attempts", dl.Attempts, "err", err)
				}
				if derr := tx.Delete(ctx, KindDelivery, dl.ID); derr != nil && !errors.Is(derr, store.ErrNotFound) {
					return derr
				}
				return nil
			}
			now, nerr := store.Now(ctx, tx, d.Now)
			if nerr != nil {
				return nerr
			}
			dl.LastError = err.Error()
			dl.LeaseUntil = time.Time{}
			dl.NextAttempt = now.Add(backoff(dl.Attempts))
			return records.Save(ctx, tx, KindDelivery, dl.ID, outboxOwner, dl.CreatedAt, now, dl)
		}); uerr != nil {
			d.Log.Warn("webhook outbox", "err", uerr)
		}
	}
	return len(due)
}

func backoff(attempts int) time.Duration {
	b := time.Second << min(attempts-1, 10)
	return min(b, 10*time.Minute)
}

// Sign returns the signature headers of a delivery body.
func Sign(keys *custody.ServerKeys, now time.Time, body []byte) (timestamp, signature string, err error) {
	timestamp = strconv.FormatInt(now.Unix(), 10)
	sig, err := keys.SignSHA256DER(custody.Webhook, append([]byte(timestamp+"."), body...))
	if err != nil {
		return "", "", err
	}
	return timestamp, hex.EncodeToString(sig), nil
}

func (d *Deliverer) send(ctx context.Context, dl *Delivery) error {
	ts, sig, err := Sign(d.Keys, d.Now(), dl.Body)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, dl.URL, bytes.NewReader(dl.Body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "latchkey-webhooks")
	req.Header.Set("X-Latchkey-Delivery", dl.ID)
	req.Header.Set("X-Latchkey-Timestamp", ts)
	req.Header.Set("X-Latchkey-Signature", sig)
	// Turnkey's delivery contract: routing headers and an Ed25519 signature over
	// "v1.ed25519.<key id>.<timestamp ms>.<event id>.<raw body>" (verifyTurnkeyWebhookSignature).
	event := dl.EventType
	if event == "" {
		event = EventActivityUpdates
	}
	tsMs := strconv.FormatInt(d.Now().UnixMilli(), 10)
	_, kid := d.Keys.WebhookEd25519()
	req.Header.Set("X-Turnkey-Organization-Id", dl.OrgID)
	req.Header.Set("X-Turnkey-Event-Type", event)
	req.Header.Set("X-Turnkey-Timestamp", tsMs)
	req.Header.Set("X-Turnkey-Webhook-Version", "1")
	req.Header.Set("X-Turnkey-Event-Id", dl.ID)
	req.Header.Set("X-Turnkey-Signature-Key-Id", kid)
	req.Header.Set("X-Turnkey-Signature-Algorithm", "ed25519")
	req.Header.Set("X-Turnkey-Signature-Version", "v1")
	signed := append([]byte("v1.ed25519."+kid+"."+tsMs+"."+dl.ID+"."), dl.Body...)
	req.Header.Set("X-Turnkey-Signature", hex.EncodeToString(d.Keys.SignWebhook(signed)))
	resp, err := d.Client.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("endpoint answered HTTP %d", resp.StatusCode)
	}
	return nil
}

// Digest is what a receiver verifies the signature against.
func Digest(timestamp string, body []byte) [32]byte {
	return sha256.Sum256(append([]byte(timestamp+"."), body...))
}

// JWKS is the webhook signing key as Turnkey publishes its own
// (GET /public/v1/discovery/webhooks/jwks): receivers look the X-Turnkey-Signature-Key-Id up in it.
func JWKS(keys *custody.ServerKeys) []byte {
	pub, kid := keys.WebhookEd25519()
	b, _ := json.Marshal(
		map[string]any{
			"keys": []map[string]string{{"kid": kid, "kty": "OKP", "crv": "Ed25519", "alg": "EdDSA", "use": "sig",
				"x": base64.RawURLEncoding.EncodeToString(
					pub,
				), "turnkey_signature_algorithm": "ed25519", "turnkey_signature_version": "v1"}},
		},
	)
	return b
}
