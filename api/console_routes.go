package api

import "github.com/labstack/echo/v4"

// consoleRoutes mounts the web console (DESIGN §7).
func (s *Server) consoleRoutes(e *echo.Echo) {}
