package dashboard

// SetBeforeCheck runs f inside every password check, before the hash (tests hold a check in
// flight with it).
func SetBeforeCheck(s *Server, f func()) { s.beforeCheck = f }
