package failover

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/activity"
	"github.com/latchkey/latchkey/internal/stamp"
)

// clientTimeout is how long a load client waits for an answer before it counts the request
// as failed: far longer than any failover the test makes, so that a slow answer is latency.
const clientTimeout = 30 * time.Second

// entry is one request of the load and what came of it.
type entry struct {
	client, seq int
	op          string
	orgID       string        // the organization the activity is in
	signer      stamp.Stamper // who stamped it (and reads it back)
	server      string
	req         stamped
	fingerprint string
	start, end  time.Time
	ans         answer
	// resent is the answer to the same bytes sent to another process after the first one's
	// connection broke because that process was killed (what a load balancer does).
	resent *answer
}

// final is the answer the client ends with.
func (e *entry) final() answer {
	if e.resent != nil {
		return *e.resent
	}
	return e.ans
}

// load is a dozen clients signing, creating tags and creating sub-organizations with a wallet
// each, spread over every live Latchkey process, and the ledger of their answers.
type load struct {
	d      *deployment
	prefix string
	client *http.Client
	stop   chan struct{}
	wg     sync.WaitGroup
	killed atomic.Pointer[serveProcess] // a process the clients route around (scenario d)

	mu     sync.Mutex
	ledger []*entry
}

func startLoad(t *testing.T, d *deployment, prefix string, clients int) *load {
	t.Helper()
	l := &load{d: d, prefix: prefix, stop: make(chan struct{}), client: &http.Client{
		Timeout:   clientTimeout,
		Transport: &http.Transport{MaxIdleConnsPerHost: 2 * clients, MaxConnsPerHost: 0},
	}}
	for i := 0; i < clients; i++ {
		// Each client is the root user of the sub-organizations it creates, and creates its
		// tags in the latest: an organization holds at most 100 tags.
		priv, pub, err := stamp.GenerateKey(stamp.CurveP256)
		if err != nil {
			t.Fatal(err)
		}
		st, err := stamp.NewP256Stamper(priv)
		if err != nil {
			t.Fatal(err)
		}
		l.wg.Add(1)
		go l.run(i, st, pub)
	}
	return l
}

func (l *load) run(i int, own stamp.Stamper, ownPub string) {
	defer l.wg.Done()
	d := l.d
	subOrg := "" // the latest sub-organization this client created
	for n := 0; ; n++ {
		select {
		case <-l.stop:
			return
		default:
		}
		var live []*serveProcess
		for _, s := range d.servers {
			if s != l.killed.Load() {
				live = append(live, s)
			}
		}
		s := live[(i+n)%len(live)]
		op, typ, orgID, signer := "sign_raw_payload", "ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2", d.orgID, d.root
		digest := sha256.Sum256([]byte(fmt.Sprintf("%s %d %d", l.prefix, i, n)))
		var params any = map[string]any{"signWith": d.addresses[i], "payload": hex.EncodeToString(digest[:]),
			"encoding": "PAYLOAD_ENCODING_HEXADECIMAL", "hashFunction": "HASH_FUNCTION_NO_OP"}
		switch {
		case n%5 == 2:
			// A sub-organization of its own for each wallet: an organization holds at most 100.
			op, typ = "create_sub_organization", "ACTIVITY_TYPE_CREATE_SUB_ORGANIZATION_V7"
			params = map[string]any{
				"subOrganizationName": fmt.Sprintf("%s end user %d-%d", l.prefix, i, n),
				"rootQuorumThreshold": 1,
				"rootUsers": []any{map[string]any{"userName": "end user", "apiKeys": []any{map[string]any{
					"apiKeyName": "device", "publicKey": ownPub, "curveType": "API_KEY_CURVE_P256"}},
					"authenticators": []any{}, "oauthProviders": []any{}}},
				"wallet": map[string]any{"walletName": "main", "accounts": walletAccount},
			}
		case n%5 == 4 && subOrg != "":
			op, typ, orgID, signer = "create_user_tag", "ACTIVITY_TYPE_CREATE_USER_TAG", subOrg, own
			params = map[string]any{"userTagName": fmt.Sprintf("%s tag %d-%d", l.prefix, i, n), "userIds": []string{}}
		}
		body := d.envelope(orgID, typ, params)
		req, err := stampBody(signer, "/public/v1/submit/"+op, body)
		if err != nil {
			panic(err)
		}
		e := &entry{client: i, seq: n, op: op, orgID: orgID, signer: signer, server: s.name, req: req,
			fingerprint: activity.Fingerprint(body)}
		e.start = time.Now()
		e.ans = send(l.client, s.api, req)
		if e.ans.status == 0 && l.killed.Load() == s {
			// The process died holding the connection: the same bytes go to another one.
			for _, other := range d.servers {
				if other != s {
					a := send(l.client, other.api, req)
					e.resent = &a
					break
				}
			}
		}
		e.end = time.Now()
		if a := e.final(); op == "create_sub_organization" && a.acknowledged() {
			var r struct {
				CreateSubOrganizationResultV7 struct {
					SubOrganizationID string `json:"subOrganizationId"`
				} `json:"createSubOrganizationResultV7"`
			}
			if json.Unmarshal(a.result, &r) == nil && r.CreateSubOrganizationResultV7.SubOrganizationID != "" {
				subOrg = r.CreateSubOrganizationResultV7.SubOrganizationID
			}
		}
		l.mu.Lock()
		l.ledger = append(l.ledger, e)
		l.mu.Unlock()
	}
}

// awaitBack waits until every process the clients use has acknowledged a request sent after
// at (for at most a minute), then lets the load run for settle more. It returns when each was
// back, and when the last was.
func (l *load) awaitBack(at time.Time) (map[string]time.Duration, time.Time) {
	back := map[string]time.Duration{}
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		l.mu.Lock()
		for _, e := range l.ledger {
			if _, ok := back[e.server]; !ok && e.start.After(at) && e.final().acknowledged() {
				back[e.server] = e.end.Sub(at)
			}
		}
		l.mu.Unlock()
		live := 0
		for _, s := range l.d.servers {
			if s != l.killed.Load() {
				live++
			}
		}
		if len(back) >= live {
			break
		}
	}
	time.Sleep(settle)
	last := at
	for _, d := range back {
		if at.Add(d).After(last) {
			last = at.Add(d)
		}
	}
	return back, last
}

// finish stops the clients and waits for the requests in flight.
func (l *load) finish() []*entry {
	close(l.stop)
	l.wg.Wait()
	l.client.CloseIdleConnections()
	return l.ledger
}

// verdict is what the checker found in a ledger.
type verdict struct {
	requests, acknowledged, resent int
	errors                         map[string]int // error answers by kind
	lost                           []string       // acknowledged activities not on the new primary
	changed                        []string       // acknowledged activities whose stored result differs
	unreadable                     []string       // acknowledged activities a server did not read back
	duplicated                     []string       // request bodies that made more than one activity
	committedDespiteError          int            // error answers whose activity completed after all
}

func (v verdict) errorCount() int {
	n := 0
	for _, c := range v.errors {
		n += c
	}
	return n
}

func (v verdict) String() string {
	var kinds []string
	for k, n := range v.errors {
		kinds = append(kinds, fmt.Sprintf("%d × %s", n, k))
	}
	sort.Strings(kinds)
	return fmt.Sprintf("%d requests, %d acknowledged, %d resent after a killed process; "+
		"lost %d, changed %d, unreadable %d, duplicated %d; %d error answers (%d of them completed after all)%s",
		v.requests, v.acknowledged, v.resent, len(v.lost), len(v.changed), len(v.unreadable), len(v.duplicated),
		v.errorCount(), v.committedDespiteError, strings.Join(append([]string{""}, kinds...), "\n    "))
}

var uuidPattern = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)

// errorKind groups error answers: the status and the start of the message, ids left out.
func errorKind(a answer) string {
	if a.status == 0 {
		msg := a.err
		if i := strings.LastIndex(msg, ": "); i >= 0 {
			msg = msg[i+2:]
		}
		return "no answer (" + msg + ")"
	}
	var e struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}
	_ = json.Unmarshal(a.raw, &e)
	msg := uuidPattern.ReplaceAllString(e.Message, "…")
	if len(msg) > 90 {
		msg = msg[:90] + "…"
	}
	if a.status == http.StatusOK {
		return fmt.Sprintf("HTTP 200, activity %s", a.activityStatus)
	}
	return fmt.Sprintf("HTTP %d code %d %q", a.status, e.Code, msg)
}

// check compares the ledger with the database on primary, and each acknowledged activity's
// stored result (read back through via) with the result its client was given.
func check(t *testing.T, primaryPort int, d *deployment, via *serveProcess, ledger []*entry) verdict {
	t.Helper()
	defer func(began time.Time) { t.Logf("checked the ledger in %v", time.Since(began).Round(time.Millisecond)) }(
		time.Now(),
	)
	v := verdict{requests: len(ledger), errors: map[string]int{}}
	conn, err := connect(primaryPort, "latchkey")
	if err != nil {
		t.Fatalf("the new primary: %v", err)
	}
	defer conn.Close(context.Background())
	fps := make([]string, 0, len(ledger))
	for _, e := range ledger {
		fps = append(fps, e.fingerprint)
	}
	rows, err := conn.Query(context.Background(),
		"SELECT id, fingerprint, status FROM activities WHERE fingerprint = ANY($1)", fps)
	if err != nil {
		t.Fatal(err)
	}
	// A body's activities, FAILED ones included: a body the server refused once and carried out
	// on a resend made two.
	byFingerprint, completed := map[string][]string{}, map[string]bool{}
	for rows.Next() {
		var id, fp, status string
		if err := rows.Scan(&id, &fp, &status); err != nil {
			t.Fatal(err)
		}
		byFingerprint[fp] = append(byFingerprint[fp], id)
		if status == "ACTIVITY_STATUS_COMPLETED" {
			completed[fp] = true
		}
	}
	if rows.Err() != nil {
		t.Fatal(rows.Err())
	}
	var acked []*entry
	for _, e := range ledger {
		if e.resent != nil {
			v.resent++
		}
		ids := byFingerprint[e.fingerprint]
		if len(ids) > 1 {
			v.duplicated = append(v.duplicated, fmt.Sprintf("%s %v", e.op, ids))
		}
		a := e.final()
		if !a.acknowledged() {
			v.errors[errorKind(a)]++
			if completed[e.fingerprint] {
				v.committedDespiteError++
			}
			continue
		}
		v.acknowledged++
		if !slices.Contains(ids, a.activityID) {
			v.lost = append(v.lost, e.op+" "+a.activityID)
			continue
		}
		acked = append(acked, e)
	}
	// The stored results, read back through a Latchkey process, eight at a time. A process
	// that stopped answering (a failure the ledger already shows) is not waited for activity
	// after activity: after 16 unanswered reads in a row the rest are counted unreadable.
	var mu sync.Mutex
	var wg sync.WaitGroup
	var unanswered atomic.Int32
	work := make(chan *entry)
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for e := range work {
				a := e.final()
				var got answer
				if unanswered.Load() >= 16 {
					got = answer{err: via.name + " stopped answering"}
				} else {
					got = d.query(via, e.signer, "get_activity",
						map[string]any{"organizationId": e.orgID, "activityId": a.activityID})
					if got.status == 0 {
						unanswered.Add(1)
					} else {
						unanswered.Store(0)
					}
				}
				var out struct {
					Activity struct {
						Result json.RawMessage `json:"result"`
					} `json:"activity"`
				}
				mu.Lock()
				switch {
				case got.status != http.StatusOK || json.Unmarshal(got.raw, &out) != nil:
					v.unreadable = append(v.unreadable, fmt.Sprintf("%s %s: %s", e.op, a.activityID, got))
				case !sameJSON(out.Activity.Result, a.result):
					v.changed = append(v.changed, fmt.Sprintf("%s %s: %s", e.op, a.activityID, got))
				}
				mu.Unlock()
			}
		}()
	}
	for _, e := range acked {
		work <- e
	}
	close(work)
	wg.Wait()
	return v
}

func sameJSON(a, b []byte) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && reflect.DeepEqual(x, y)
}

// switchLatency reports the requests caught in a switch: in flight when it began (at from) or
// sent before the store was back (until), and how much longer than the median request before
// the switch they took.
func switchLatency(ledger []*entry, from, until time.Time) string {
	var before, caught []time.Duration
	for _, e := range ledger {
		d := e.end.Sub(e.start)
		switch {
		case e.end.Before(from) && e.final().acknowledged():
			before = append(before, d)
		case e.start.Before(until) && e.end.After(from):
			caught = append(caught, d)
		}
	}
	if len(before) == 0 || len(caught) == 0 {
		return fmt.Sprintf("%d requests before the switch, %d caught in it", len(before), len(caught))
	}
	slices.Sort(before)
	median := before[len(before)/2]
	added := make([]time.Duration, len(caught))
	for i, d := range caught {
		added[i] = max(d-median, 0)
	}
	slices.Sort(added)
	pct := func(p float64) time.Duration { return added[min(len(added)-1, int(p*float64(len(added))))] }
	return fmt.Sprintf("%d requests caught in the switch, added latency p50 %v, p99 %v, max %v "+
		"(over the median request before it, %v)", len(caught), pct(0.50).Round(time.Millisecond),
		pct(0.99).Round(time.Millisecond), added[len(added)-1].Round(time.Millisecond), median.Round(time.Millisecond))
}

// backAfter reports, for each process, how long after at its first request sent then was
// acknowledged.
func backAfter(ledger []*entry, at time.Time) string {
	first := map[string]time.Time{}
	for _, e := range ledger {
		if e.start.After(at) && e.final().acknowledged() {
			if f, ok := first[e.server]; !ok || e.end.Before(f) {
				first[e.server] = e.end
			}
		}
	}
	var out []string
	for _, name := range slices.Sorted(maps.Keys(first)) {
		out = append(out, fmt.Sprintf("%s answered %v after", name, first[name].Sub(at).Round(time.Millisecond)))
	}
	return strings.Join(out, ", ")
}
