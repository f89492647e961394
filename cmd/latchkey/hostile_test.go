package main

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/rlp"

	"github.com/latchkey/latchkey/internal/authproxy"
	"github.com/latchkey/latchkey/internal/custody"
	"github.com/latchkey/latchkey/internal/server"
	"github.com/latchkey/latchkey/internal/stamp"
)

// HostileMemoryBound is the peak resident memory (VmHWM) a serve process may reach while
// dozens of hostile requests at the body limit arrive at once on every listener, with and
// without credentials (docs/performance.md, "Hostile load"): the process's own ~70 MiB, plus at
// most 16 MiB of bodies in flight (--max-inflight-body-bytes) times what a request builds from
// its body (at most about 16 bytes a byte: a refused signing request's FAILED activity holds its
// body twice, JSON-escaped), times two for the collector's headroom.
const HostileMemoryBound = 600 << 20

// hostileClients is how many hostile requests are in flight at once.
const hostileClients = 48

// Dozens of concurrent hostile requests, each at a listener's body limit, leave a real serve
// process answering its health checks and a well-formed whoami throughout, every hostile
// request answered (a 4xx, a 503 from the admission gate, or served when it is costly but within
// the limits; never a 500 or a dropped connection), and its peak memory under HostileMemoryBound.
// The figures are logged (go test -v -run Hostile). To measure one kind of request alone, set
// HOSTILE_ONLY to its index; HOSTILE_DEBUG_ADDR serves pprof and saves an allocation profile to
// /tmp/hostile-allocs.pb.
func TestHostileLoadLeavesTheServerResponsive(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads the server's peak memory from /proc")
	}
	if testing.Short() {
		t.Skip("-short: starts a server and loads it for some seconds")
	}
	dir, mk := t.TempDir(), filepath.Join(t.TempDir(), "master.key")
	if _, err := custody.GenerateMasterKeyFile(mk); err != nil {
		t.Fatal(err)
	}
	apiPriv, apiPub, _ := stamp.GenerateKey(stamp.CurveP256)
	store := []string{"--data-dir", dir, "--master-key-file", mk}
	var initOut bytes.Buffer
	if err := run(context.Background(), append([]string{"init", "--org-name", "Acme", "--user-name", "ops",
		"--api-public-key", apiPub}, store...), &initOut, io.Discard); err != nil {
		t.Fatal(err)
	}
	var created server.Created
	if err := json.Unmarshal(initOut.Bytes(), &created); err != nil {
		t.Fatal(err)
	}
	var proxyOut bytes.Buffer
	if err := run(context.Background(), append([]string{"proxy", "enable", "--org", created.OrganizationID,
		"--allowed-origins", "http://localhost:3000"}, store...), &proxyOut, io.Discard); err != nil {
		t.Fatal(err)
	}
	var proxyCfg struct {
		ConfigID string `json:"configId"`
	}
	_ = json.Unmarshal(proxyOut.Bytes(), &proxyCfg)

	addrs := map[string]string{}
	for _, name := range []string{"api", "proxy", "dashboard", "metrics"} {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addrs[name] = ln.Addr().String()
		ln.Close()
	}
	srv := child(t, append([]string{"serve", "--api-addr", addrs["api"], "--proxy-addr", addrs["proxy"],
		"--dashboard-addr", addrs["dashboard"], "--metrics-addr", addrs["metrics"], "--log-level", "error", "--debug-addr", os.Getenv("HOSTILE_DEBUG_ADDR")},
		store...)...)
	var logs syncBuffer
	srv.Stderr = &logs
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = srv.Process.Kill(); _ = srv.Wait() }()
	api := "http://" + addrs["api"]
	waitFor(t, func() bool {
		resp, err := http.Get(api + "/readyz")
		if err == nil {
			resp.Body.Close()
		}
		return err == nil && resp.StatusCode == 200
	}, "serve to be ready:\n"+logs.String())
	idle := peakMemory(t, srv.Process.Pid)

	stamper, err := stamp.NewP256Stamper(apiPriv)
	if err != nil {
		t.Fatal(err)
	}
	stamped := func(path string, body []byte) *http.Request {
		name, value, err := stamper.Stamp(body)
		if err != nil {
			t.Fatal(err)
		}
		req, _ := http.NewRequest(http.MethodPost, api+path, bytes.NewReader(body))
		req.Header.Set(name, value)
		return req
	}
	envelope := func(typ, params string) []byte {
		return []byte(fmt.Sprintf(`{"type":%q,"organizationId":%q,"timestampMs":"%d","parameters":%s}`,
			typ, created.OrganizationID, time.Now().UnixMilli(), params))
	}

	// The hostile bodies, each as large as its listener takes.
	const apiMax, proxyMax, dashMax = 2 << 20, authproxy.DefaultMaxBody, 64 << 10
	shapes := map[string]func(limit int) []byte{
		"deep arrays": func(limit int) []byte {
			return []byte(strings.Repeat("[", limit/2) + strings.Repeat("]", limit/2))
		},
		"deep objects": func(limit int) []byte {
			n := (limit - 1) / 6
			return []byte(strings.Repeat(`{"a":`, n) + "1" + strings.Repeat("}", n))
		},
		"long name over many elements": func(limit int) []byte {
			n := limit / 4
			return []byte(`{"` + strings.Repeat("n", n) + `":[` + strings.Repeat("1,", (limit-n)/2-8) + `1]}`)
		},
		"many members": func(limit int) []byte {
			var b bytes.Buffer
			b.WriteString("{")
			for i := 0; b.Len() < limit-32; i++ {
				fmt.Fprintf(&b, `"m%d":[],`, i)
			}
			b.WriteString(`"z":1}`)
			return b.Bytes()
		},
	}
	var requests []func() *http.Request
	for _, name := range slices.Sorted(maps.Keys(shapes)) {
		make := shapes[name]
		apiBody, proxyBody, dashBody := make(apiMax-1024), make(proxyMax-1024), make(dashMax-1024)
		requests = append(requests,
			func() *http.Request { // no credentials
				req, _ := http.NewRequest(
					http.MethodPost,
					api+"/public/v1/query/get_activity",
					bytes.NewReader(apiBody),
				)
				return req
			},
			func() *http.Request { // stamped: the stamp is checked after the strict pass
				return stamped("/public/v1/submit/create_users", apiBody)
			},
			func() *http.Request {
				req, _ := http.NewRequest(
					http.MethodPost,
					"http://"+addrs["proxy"]+"/v1/account",
					bytes.NewReader(proxyBody),
				)
				req.Header.Set(authproxy.ConfigHeader, proxyCfg.ConfigID)
				req.Header.Set("Origin", "http://localhost:3000")
				return req
			},
			func() *http.Request {
				req, _ := http.NewRequest(
					http.MethodPost,
					"http://"+addrs["dashboard"]+"/login",
					bytes.NewReader(dashBody),
				)
				req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
				return req
			},
		)
	}
	// With credentials, the twelve costly paths of issue 23: EIP-712 payloads (cyclic types,
	// repeated array suffixes, a long array), a Solana transaction of 65,535 account references,
	// thousands of wallet accounts, thousands of status filters, and a transaction whose policy
	// indexes long calldata in a nested loop (signed by a user policies apply to).
	requests = append(requests, hostileSignedRequests(t, api, created.OrganizationID, stamper, envelope)...)
	// Stamped and well-formed JSON, at the body limit: a create_users with a member the
	// intent does not have, holding most of the body.
	big := envelope("ACTIVITY_TYPE_CREATE_USERS_V3", `{"users":[],"x":"`+strings.Repeat("x", apiMax-4096)+`"}`)
	requests = append(requests, func() *http.Request { return stamped("/public/v1/submit/create_users", big) })

	// The request: 200 KB of nested brackets, without credentials, answered 400 naming
	// the depth limit on the API and on the auth proxy.
	deep := []byte(strings.Repeat("[", 100000) + strings.Repeat("]", 100000))
	for _, req := range []*http.Request{requests[0](), requests[2]()} {
		req.Body, req.ContentLength = io.NopCloser(bytes.NewReader(deep)), int64(len(deep))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		msg, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(msg), "limit of 32 levels") {
			t.Fatalf("%s: the deep body got %d %s", req.URL, resp.StatusCode, msg)
		}
	}

	if only := os.Getenv("HOSTILE_ONLY"); only != "" { // one kind of request alone, to measure it
		i, _ := strconv.Atoi(only)
		requests = requests[i : i+1]
	}
	var (
		stop                  atomic.Bool
		answered, shed, wrong atomic.Int64
		wg                    sync.WaitGroup
		mu                    sync.Mutex
		wrongs                []string
	)
	client := &http.Client{Timeout: 2 * time.Minute}
	for i := 0; i < hostileClients; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := i; !stop.Load(); n++ {
				req := requests[n%len(requests)]()
				resp, err := client.Do(req)
				if err != nil {
					wrong.Add(1)
					mu.Lock()
					wrongs = append(wrongs, req.URL.Path+": "+err.Error())
					mu.Unlock()
					continue
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				switch {
				case resp.StatusCode == http.StatusServiceUnavailable:
					shed.Add(1)
				case resp.StatusCode >= 200 && resp.StatusCode < 500:
					// Refused, or (a costly request within the limits) served.
					answered.Add(1)
				default:
					wrong.Add(1)
					mu.Lock()
					wrongs = append(wrongs, req.URL.Path+": HTTP "+strconv.Itoa(resp.StatusCode))
					mu.Unlock()
				}
			}
		}()
	}

	// Meanwhile, a well-formed client: whoami and /readyz, each must succeed.
	var worst time.Duration
	var probes int
	deadline := time.Now().Add(8 * time.Second)
	for time.Now().Before(deadline) {
		start := time.Now()
		resp, err := client.Do(stamped("/public/v1/query/whoami",
			[]byte(fmt.Sprintf(`{"organizationId":%q}`, created.OrganizationID))))
		if err != nil {
			t.Fatalf("whoami during the hostile load: %v", err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("whoami during the hostile load: HTTP %d %s", resp.StatusCode, body)
		}
		if resp, err = client.Get(api + "/readyz"); err != nil || resp.StatusCode != 200 {
			t.Fatalf("/readyz during the hostile load: %v %v", resp, err)
		}
		resp.Body.Close()
		worst = max(worst, time.Since(start))
		probes++
		time.Sleep(50 * time.Millisecond)
	}
	if os.Getenv("HOSTILE_DEBUG_ADDR") != "" {
		if resp, err := http.Get("http://" + os.Getenv("HOSTILE_DEBUG_ADDR") + "/debug/pprof/allocs"); err == nil {
			b, _ := io.ReadAll(resp.Body)
			_ = os.WriteFile("/tmp/hostile-allocs.pb", b, 0o644)
		}
	}
	stop.Store(true)
	wg.Wait()
	peak := peakMemory(t, srv.Process.Pid)

	t.Logf("%d hostile clients, 8 s: %d answered (4xx, or served), %d shed with 503; %d probes (whoami and /readyz), "+
		"slowest pair %v; peak resident memory %d MiB (idle %d MiB)",
		hostileClients, answered.Load(), shed.Load(), probes, worst.Round(time.Millisecond), peak>>20, idle>>20)
	if wrong.Load() > 0 {
		t.Errorf(
			"%d hostile requests got a 5xx other than 503, or no answer, e.g. %v",
			wrong.Load(),
			wrongs[:min(5, len(wrongs))],
		)
	}
	if answered.Load() == 0 {
		t.Error("no hostile request was answered")
	}
	if peak > HostileMemoryBound {
		t.Errorf("peak resident memory %d MiB, over the bound of %d MiB", peak>>20, HostileMemoryBound>>20)
	}
}

// peakMemory is a process's peak resident memory (VmHWM), in bytes.
func peakMemory(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmHWM in /proc/pid/status")
	return 0
}

// hostileSignedRequests sets up what the stamped hostile requests need (a wallet, a user who is
// not root with an API key, a policy that reads calldata in a nested loop) and returns them.
func hostileSignedRequests(t *testing.T, api, org string, root stamp.Stamper,
	envelope func(typ, params string) []byte) []func() *http.Request {
	t.Helper()
	post := func(s stamp.Stamper, path string, body []byte) *http.Request {
		name, value, err := s.Stamp(body)
		if err != nil {
			t.Fatal(err)
		}
		req, _ := http.NewRequest(http.MethodPost, api+path, bytes.NewReader(body))
		req.Header.Set(name, value)
		return req
	}
	submit := func(s stamp.Stamper, op, typ string, params any) map[string]any {
		t.Helper()
		p, _ := json.Marshal(params)
		resp, err := http.DefaultClient.Do(post(s, "/public/v1/submit/"+op, envelope(typ, string(p))))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out struct {
			Activity struct {
				Status string         `json:"status"`
				Result map[string]any `json:"result"`
			} `json:"activity"`
		}
		raw, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 || json.Unmarshal(raw, &out) != nil ||
			out.Activity.Status != "ACTIVITY_STATUS_COMPLETED" {
			t.Fatalf("%s: HTTP %d %s", op, resp.StatusCode, raw)
		}
		return out.Activity.Result
	}
	w := submit(root, "create_wallet", "ACTIVITY_TYPE_CREATE_WALLET", map[string]any{
		"walletName": "hostile",
		"accounts": []map[string]string{{"curve": "CURVE_SECP256K1", "pathFormat": "PATH_FORMAT_BIP32",
			"path": "m/44'/60'/0'/0/0", "addressFormat": "ADDRESS_FORMAT_ETHEREUM"}},
	})["createWalletResult"].(map[string]any)
	walletID, addr := w["walletId"].(string), w["addresses"].([]any)[0].(string)
	bobPriv, bobPub, _ := stamp.GenerateKey(stamp.CurveP256)
	u := submit(root, "create_users", "ACTIVITY_TYPE_CREATE_USERS_V4", map[string]any{"users": []any{map[string]any{
		"userName": "bob", "apiKeys": []any{map[string]any{"apiKeyName": "bob", "publicKey": bobPub,
			"curveType": "API_KEY_CURVE_P256"}}, "authenticators": []any{}, "oauthProviders": []any{},
		"userTags": []any{}}}})["createUsersResult"].(map[string]any)
	bobID := u["userIds"].([]any)[0].(string)
	bob, err := stamp.NewP256Stamper(bobPriv)
	if err != nil {
		t.Fatal(err)
	}
	indices := make([]string, 1000)
	for i := range indices {
		indices[i] = strconv.Itoa(i)
	}
	list := "[" + strings.Join(indices, ",") + "]"
	submit(root, "create_policy", "ACTIVITY_TYPE_CREATE_POLICY_V3", map[string]any{
		"policyName": "calldata loop", "effect": "EFFECT_ALLOW",
		"consensus": "approvers.any(user, user.id == '" + bobID + "')",
		"condition": list + ".any(i, " + list + ".any(j, eth.tx.data[i] == 'x'))", "notes": "hostile"})

	typed := func(types, message string) string {
		return `{"types":{"EIP712Domain":[{"name":"name","type":"string"}],` + types + `},` +
			`"primaryType":"P","domain":{"name":"x"},"message":` + message + `}`
	}
	var cyclicTypes, cyclicMsg strings.Builder
	cyclicTypes.WriteString(`"P":[`)
	cyclicMsg.WriteString("{")
	for i := 0; i < 1200; i++ {
		if i > 0 {
			cyclicTypes.WriteString(",")
			cyclicMsg.WriteString(",")
		}
		fmt.Fprintf(&cyclicTypes, `{"name":"f%d","type":"T%d"}`, i, i)
		fmt.Fprintf(&cyclicMsg, `"f%d":{"p":[],"x":1}`, i)
	}
	cyclicTypes.WriteString("]")
	for i := 0; i < 1200; i++ {
		fmt.Fprintf(&cyclicTypes, `,"T%d":[{"name":"p","type":"P[]"},{"name":"x","type":"uint256"}]`, i)
	}
	cyclicMsg.WriteString("}")
	payloads := []string{
		typed(cyclicTypes.String(), cyclicMsg.String()),
		typed(`"P":[{"name":"a","type":"uint256`+strings.Repeat("[]", 10000)+`"}]`, `{"a":[]}`),
		typed(`"P":[{"name":"a","type":"uint256[]"}]`, `{"a":[`+strings.Repeat("1,", 460000)+`1]}`),
	}
	var out []func() *http.Request
	for _, payload := range payloads {
		p, _ := json.Marshal(map[string]any{"signWith": addr, "payload": payload,
			"encoding": "PAYLOAD_ENCODING_EIP712", "hashFunction": "HASH_FUNCTION_NO_OP"})
		out = append(out, func() *http.Request {
			return post(
				root,
				"/public/v1/submit/sign_raw_payload",
				envelope("ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2", string(p)),
			)
		})
	}
	// A legacy Solana message: header, 1 account, blockhash, 7 instructions of 65,535 references.
	var sol bytes.Buffer
	sol.Write([]byte{1, 1, 0, 0, 1})
	sol.Write(make([]byte, 32))
	sol.Write(make([]byte, 32))
	sol.WriteByte(7)
	for i := 0; i < 7; i++ {
		sol.Write([]byte{0, 0xff, 0xff, 0x03})
		sol.Write(make([]byte, 65535))
		sol.WriteByte(0)
	}
	solTx := hexString(append([]byte{1}, append(make([]byte, 64), sol.Bytes()...)...))
	accounts := make([]map[string]string, 7000)
	for i := range accounts {
		accounts[i] = map[string]string{"curve": "CURVE_SECP256K1", "pathFormat": "PATH_FORMAT_BIP32",
			"path": "m/44'/60'/0'/0/" + strconv.Itoa(i+1), "addressFormat": "ADDRESS_FORMAT_ETHEREUM"}
	}
	statuses := make([]string, 36000)
	for i := range statuses {
		statuses[i] = "ACTIVITY_STATUS_COMPLETED"
	}
	calldata := strings.Repeat("ab", 8<<10)
	others := []struct {
		signer stamp.Stamper
		path   string
		typ    string
		params any
	}{
		{root, "/public/v1/submit/sign_transaction", "ACTIVITY_TYPE_SIGN_TRANSACTION_V2", map[string]any{
			"signWith": addr, "unsignedTransaction": solTx, "type": "TRANSACTION_TYPE_SOLANA"}},
		{root, "/public/v1/submit/create_wallet_accounts", "ACTIVITY_TYPE_CREATE_WALLET_ACCOUNTS",
			map[string]any{"walletId": walletID, "accounts": accounts}},
		{bob, "/public/v1/submit/sign_transaction", "ACTIVITY_TYPE_SIGN_TRANSACTION_V2", map[string]any{
			"signWith": addr, "unsignedTransaction": unsignedEthCall(calldata), "type": "TRANSACTION_TYPE_ETHEREUM"}},
	}
	for _, o := range others {
		p, _ := json.Marshal(o.params)
		out = append(out, func() *http.Request { return post(o.signer, o.path, envelope(o.typ, string(p))) })
	}
	q, _ := json.Marshal(map[string]any{"organizationId": org, "filterByStatus": statuses})
	out = append(out, func() *http.Request { return post(root, "/public/v1/query/list_activities", q) })
	return out
}

// unsignedEthCall is an unsigned EIP-1559 call carrying data (hexadecimal).
func unsignedEthCall(data string) string {
	d, _ := hex.DecodeString(data)
	b, _ := rlp.EncodeToBytes([]any{big.NewInt(1), uint64(1), big.NewInt(1), big.NewInt(2), uint64(60000),
		common.HexToAddress("0x1111111111111111111111111111111111111111"), big.NewInt(0), d, []any{}})
	return "02" + hex.EncodeToString(b)
}

func hexString(b []byte) string { return hex.EncodeToString(b) }
