package dashboard

// MaxBodyBytes is the largest request body the dashboard reads (its forms); the server's
// admission gate refuses larger ones before a handler runs (docs/limits.md §1).
const MaxBodyBytes = maxFormBytes
