package api

// Route is one registered method and path, in Echo's syntax (`:name` parameters).
type Route struct {
	Method, Path string
}

// Routes lists every route the server answers, for tests that hold the OpenAPI
// document to the code.
func (s *Server) Routes() []Route {
	var out []Route
	for _, r := range s.e.Routes() {
		out = append(out, Route{Method: r.Method, Path: r.Path})
	}
	return out
}
