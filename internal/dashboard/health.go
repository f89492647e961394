package dashboard

import (
	"fmt"
	"net/http"
	"os"
	"runtime"
	"sort"
	"sync"
	"time"

	"github.com/latchkey/latchkey/internal/messages"
	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/webhooks"
)

// Health is what the health page shows beyond the store: latchkey serve fills it in.
type Health struct {
	// DatabaseFile is the SQLite file ("" on PostgreSQL); its size (with its -wal file) is shown.
	DatabaseFile string
	// KeyringVersion is the data key version new seals use.
	KeyringVersion func() uint32
	// Email and SMS say whether one-time codes can be sent that way; EmailDetail and SMSDetail
	// say how (never a credential).
	Email, SMS             bool
	EmailDetail, SMSDetail string
	// Chains are the networks (CAIP-2) with a JSON-RPC provider.
	Chains []string
	// GasStation, when set, is the gas station section: the sponsor addresses to fund and their
	// last balances, with a warning for each under the operator's threshold.
	GasStation func() GasStation

	mu       sync.Mutex
	failures map[string]failure
}

// GasStation is the health page's gas station section.
type GasStation struct {
	// Paymaster and FeePayer are the sponsor keys' addresses (EVM, Solana).
	Paymaster, FeePayer string
	// Paused is the operator's kill switch.
	Paused bool
	// Networks are the sponsored networks, their sponsor balance as last read.
	Networks []GasSponsor
}

// GasSponsor is a sponsor account on one sponsored network.
type GasSponsor struct {
	Network, Address string
	// Balance and Threshold are in the network's smallest unit (wei, lamports); Balance is ""
	// until read, Error says why the last read failed.
	Balance, Threshold, Error string
	Low                       bool
	CheckedAt                 time.Time
}

type failure struct {
	At    time.Time
	Count int64
}

// maxProviderNames bounds the providers whose failures are remembered.
const maxProviderNames = 64

// Failed records a failed delivery or call of a provider: "email", "sms", "webhooks" or a
// chain network. The health page shows the last one and how many.
func (h *Health) Failed(provider string, at time.Time) {
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.failures == nil {
		h.failures = map[string]failure{}
	}
	f, ok := h.failures[provider]
	if !ok && len(h.failures) >= maxProviderNames {
		return
	}
	f.At, f.Count = at, f.Count+1
	h.failures[provider] = f
}

func (h *Health) lastFailure(provider string) failure {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.failures[provider]
}

type providerRow struct {
	Name, Status, Detail string
	Configured           bool
	LastFailure          time.Time
	Failures             int64
}

func fileSize(path string) (int64, bool) {
	var total int64
	fi, err := os.Stat(path)
	if err != nil {
		return 0, false
	}
	total = fi.Size()
	if wal, err := os.Stat(path + "-wal"); err == nil {
		total += wal.Size()
	}
	return total, true
}

func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// describeRole says what the database is and, for a PostgreSQL primary, how many standbys
// stream from it and how many of them are synchronous.
func describeRole(r store.Role) string {
	out := r.Role
	if r.Writable {
		out += ", writable"
	} else {
		out += ", not writable"
	}
	if r.Standbys >= 0 {
		out += fmt.Sprintf("; %d standby(s) streaming, %d synchronous", r.Standbys, r.SyncStandbys)
	}
	if r.Refused != "" {
		out += "; refusing writes: " + r.Refused
	}
	return out
}

func (s *Server) health(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	storeErr := s.Store.Ping(ctx)
	status := "reachable"
	if storeErr != nil {
		status = "unreachable"
		s.Log.Error("dashboard: health: the store", "err", storeErr)
	}
	h := &s.Health
	role := "unknown (the store is unreachable)"
	if storeErr == nil {
		if r, err := store.ReadRole(ctx, s.Store); err == nil {
			role = describeRole(r)
		}
	}
	data := map[string]any{
		"Role":          role,
		"Title":         "Health",
		"Store":         status,
		"StoreOK":       storeErr == nil,
		"Dialect":       s.Store.Dialect(),
		"Uptime":        s.Now().Sub(s.started).Round(time.Second).String(),
		"Go":            runtime.Version(),
		"Requests":      s.Requests.Total(),
		"RequestsSince": s.Requests.Since(),
	}
	switch {
	case h.DatabaseFile != "":
		if n, ok := fileSize(h.DatabaseFile); ok {
			data["DatabaseSize"] = humanBytes(n)
		} else {
			data["DatabaseSize"] = "unknown (the file cannot be read)"
		}
	default:
		data["DatabaseSize"] = "not measured on " + s.Store.Dialect()
	}
	if h.KeyringVersion != nil {
		data["Keyring"] = h.KeyringVersion()
	}
	backlogs := map[string]string{}
	if ck, ok := s.Store.(countKind); ok && storeErr == nil {
		for name, kind := range map[string]string{"Messages (e-mail, SMS)": messages.KindMessage, "Webhook deliveries": webhooks.KindDelivery} {
			n, err := ck.CountKind(ctx, kind)
			if err != nil {
				backlogs[name] = "unknown"
				s.Log.Error("dashboard: health: counting an outbox", "kind", kind, "err", err)
				continue
			}
			backlogs[name] = fmt.Sprint(n)
		}
	}
	data["Backlogs"] = backlogs
	row := func(name string, configured bool, detail, key string) providerRow {
		f := h.lastFailure(key)
		st := "not configured"
		if configured {
			st = "configured"
		}
		return providerRow{
			Name:        name,
			Configured:  configured,
			Status:      st,
			Detail:      detail,
			LastFailure: f.At,
			Failures:    f.Count,
		}
	}
	rows := []providerRow{
		row("E-mail (one-time codes)", h.Email, h.EmailDetail, "email"),
		row("SMS (one-time codes)", h.SMS, h.SMSDetail, "sms"),
		row("Webhooks", true, "deliveries to the organizations' endpoints", "webhooks"),
	}
	chains := append([]string(nil), h.Chains...)
	sort.Strings(chains)
	for _, c := range chains {
		rows = append(rows, row("Chain "+c, true, "JSON-RPC provider", c))
	}
	if len(chains) == 0 {
		rows = append(rows, row("Chain providers", false, "no --chain-rpc given", ""))
	}
	data["Providers"] = rows
	if h.GasStation != nil {
		g := h.GasStation()
		data["GasStation"] = &g
	}
	s.render(w, r, http.StatusOK, "health", data)
}
