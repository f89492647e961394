package metrics

import (
	"context"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"

	"github.com/latchkey/latchkey/internal/store"
)

// Metrics holds the process's collectors.
type Metrics struct {
	reg *prometheus.Registry

	requests        *prometheus.CounterVec
	duration        *prometheus.HistogramVec
	activities      *prometheus.CounterVec
	policyDecisions *prometheus.CounterVec
	commitSeconds   *prometheus.HistogramVec
	commitBatch     *prometheus.HistogramVec
	outboxBacklog   *prometheus.GaugeVec
	outboxFailures  *prometheus.CounterVec
	otpSends        *prometheus.CounterVec
	rpcErrors       *prometheus.CounterVec
	refused         *prometheus.CounterVec
	sponsorBalance  *prometheus.GaugeVec
	sponsorLow      *prometheus.GaugeVec
	inFlight        atomic.Pointer[func() int64]
	storeRole       atomic.Pointer[func(ctx context.Context) (store.Role, error)]
}

// New returns the metrics of one process, with the Go runtime and process collectors.
func New() *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry()}
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "latchkey_http_requests_total",
		Help: "HTTP requests answered, by listener (api, proxy, dashboard, frames), operation and status code."},
		[]string{"listener", "operation", "code"})
	m.duration = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "latchkey_http_request_duration_seconds",
		Help:    "Time to answer an HTTP request, by listener and operation.",
		Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5}},
		[]string{"listener", "operation"})
	m.activities = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "latchkey_activities_total",
		Help: "Activities recorded, by activity type and status (COMPLETED, FAILED, CONSENSUS_NEEDED, REJECTED...)."},
		[]string{"type", "status"})
	m.policyDecisions = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "latchkey_policy_decisions_total",
		Help: "Policy engine decisions, by outcome (allow, deny, consensus)."}, []string{"outcome"})
	m.commitSeconds = prometheus.NewHistogramVec(
		prometheus.HistogramOpts{Name: "latchkey_store_commit_duration_seconds",
			Help:    "Time of one durable store commit (a group of transactions on SQLite), by store.",
			Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, 1}},
		[]string{"store"},
	)
	m.commitBatch = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "latchkey_store_commit_batch_size",
		Help: "Transactions committed together in one commit, by store.", Buckets: []float64{1, 2, 4, 8, 16, 32, 64, 128}},
		[]string{"store"})
	m.outboxBacklog = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "latchkey_outbox_backlog",
		Help: "Deliveries waiting in an outbox (webhooks, messages)."}, []string{"outbox"})
	m.outboxFailures = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "latchkey_outbox_delivery_failures_total",
		Help: "Failed delivery attempts from an outbox (each is retried)."}, []string{"outbox"})
	m.otpSends = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "latchkey_otp_sends_total",
		Help: "One-time codes sent, by channel (email, sms) and result (sent, failed)."}, []string{"channel", "result"})
	m.rpcErrors = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "latchkey_chain_rpc_errors_total",
		Help: "Failed calls to a chain RPC provider, by network (CAIP-2)."}, []string{"network"})
	m.refused = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "latchkey_http_requests_refused_total",
		Help: "Requests refused before their handler, by listener and reason: body_size (over the listener's " +
			"body limit) or load (the process held its bound of request-body bytes in flight)."},
		[]string{"listener", "reason"})
	inFlight := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "latchkey_http_inflight_body_bytes",
		Help: "Request-body bytes the process holds now (bounded by --max-inflight-body-bytes)."}, func() float64 {
		if f := m.inFlight.Load(); f != nil {
			return float64((*f)())
		}
		return 0
	})
	m.reg.MustRegister(m.refused, inFlight)
	m.sponsorBalance = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "latchkey_gas_sponsor_balance",
		Help: "The gas sponsor account's balance on a sponsored network, in its smallest unit (wei, lamports)."},
		[]string{"network", "address"})
	m.sponsorLow = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "latchkey_gas_sponsor_low",
		Help: "1 when the gas sponsor account's balance on a network is under the operator's low-balance threshold."},
		[]string{"network"})
	m.reg.MustRegister(m.sponsorBalance, m.sponsorLow)
	m.reg.MustRegister(m.storeGauges()...)
	m.reg.MustRegister(m.requests, m.duration, m.activities, m.policyDecisions, m.commitSeconds, m.commitBatch,
		m.outboxBacklog, m.outboxFailures, m.otpSends, m.rpcErrors,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Handler serves the metrics in the Prometheus text format (for --metrics-addr's /metrics).
func (m *Metrics) Handler() http.Handler {
	if m == nil {
		return http.NotFoundHandler()
	}
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}

// Request records one answered HTTP request.
func (m *Metrics) Request(listener, operation string, code int, d time.Duration) {
	if m == nil {
		return
	}
	m.requests.WithLabelValues(listener, operation, strconv.Itoa(code)).Inc()
	m.duration.WithLabelValues(listener, operation).Observe(d.Seconds())
}

// Activity records an activity written with a status (the type as submitted).
func (m *Metrics) Activity(typ, status string) {
	if m == nil {
		return
	}
	m.activities.WithLabelValues(typ, status).Inc()
}

// PolicyDecision records a decision of the policy engine: allow, deny or consensus.
func (m *Metrics) PolicyDecision(outcome string) {
	if m == nil {
		return
	}
	m.policyDecisions.WithLabelValues(outcome).Inc()
}

// Commit records one durable commit of n transactions.
func (m *Metrics) Commit(store string, n int, d time.Duration) {
	if m == nil {
		return
	}
	m.commitSeconds.WithLabelValues(store).Observe(d.Seconds())
	m.commitBatch.WithLabelValues(store).Observe(float64(n))
}

// CommitTotals is what the commits of store have added up to since the process started: how many
// commits, how many transactions they carried and the seconds spent committing (latchkey bench
// reads it before and after its window).
func (m *Metrics) CommitTotals(store string) (commits, transactions uint64, seconds float64) {
	if m == nil {
		return 0, 0, 0
	}
	read := func(h *prometheus.HistogramVec) (uint64, float64) {
		var d dto.Metric
		o, err := h.GetMetricWithLabelValues(store)
		if err != nil || o.(prometheus.Metric).Write(&d) != nil || d.Histogram == nil {
			return 0, 0
		}
		return d.Histogram.GetSampleCount(), d.Histogram.GetSampleSum()
	}
	commits, seconds = read(m.commitSeconds)
	_, sum := read(m.commitBatch)
	return commits, uint64(sum), seconds
}

// OutboxBacklog sets how many deliveries wait in an outbox.
func (m *Metrics) OutboxBacklog(outbox string, n int) {
	if m == nil {
		return
	}
	m.outboxBacklog.WithLabelValues(outbox).Set(float64(n))
}

// SponsorBalance sets the gas sponsor account's balance on a network (smallest unit) and whether
// it is under the low-balance threshold.
func (m *Metrics) SponsorBalance(network, address string, balance float64, low bool) {
	if m == nil {
		return
	}
	m.sponsorBalance.WithLabelValues(network, address).Set(balance)
	v := 0.0
	if low {
		v = 1
	}
	m.sponsorLow.WithLabelValues(network).Set(v)
}

// OutboxFailure records a failed delivery attempt.
func (m *Metrics) OutboxFailure(outbox string) {
	if m == nil {
		return
	}
	m.outboxFailures.WithLabelValues(outbox).Inc()
}

// OTPSend records a one-time-code send on a channel (email, sms), sent or failed.
func (m *Metrics) OTPSend(channel string, ok bool) {
	if m == nil {
		return
	}
	result := "sent"
	if !ok {
		result = "failed"
	}
	m.otpSends.WithLabelValues(channel, result).Inc()
}

// Refused records a request refused before its handler, by listener and reason.
func (m *Metrics) Refused(listener, reason string) {
	if m == nil {
		return
	}
	m.refused.WithLabelValues(listener, reason).Inc()
}

// WatchInFlight makes held the source of the request-body bytes in flight.
func (m *Metrics) WatchInFlight(held func() int64) {
	if m == nil {
		return
	}
	m.inFlight.Store(&held)
}

// ChainRPCError records a failed call to a network's provider.
func (m *Metrics) ChainRPCError(network string) {
	if m == nil {
		return
	}
	m.rpcErrors.WithLabelValues(network).Inc()
}
