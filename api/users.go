package api

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/heraldhq/herald/control"
	"github.com/heraldhq/herald/models"
)

// UserDTO is a console and admin-API user; the password hash is never shown.
type UserDTO struct {
	ID        int64  `json:"id"`
	Username  string `json:"username"`
	Role      string `json:"role"`
	CreatedAt string `json:"created_at"`
}

func userDTO(u *models.User) UserDTO {
	return UserDTO{ID: u.ID, Username: u.Username, Role: string(u.Role), CreatedAt: u.CreatedAt.UTC().Format(control.TimeFormat)}
}

// userCreateRequest creates a user; Role defaults to viewer.
type userCreateRequest struct {
	Username string      `json:"username"`
	Password string      `json:"password"`
	Role     models.Role `json:"role"`
}

// userUpdateRequest is a merge patch of a user: a new role and/or password. Either
// change revokes the user's tokens.
type userUpdateRequest struct {
	Role     *models.Role `json:"role"`
	Password *string      `json:"password"`
}

func (s *Server) userList(c echo.Context) error {
	return respondList(c, s.ctl.ListUsers, userDTO)
}

func (s *Server) userCreate(c echo.Context) error {
	var req userCreateRequest
	if err := bodyOf(c, 16<<10, &req); err != nil {
		return err
	}
	u, err := s.ctl.CreateUser(c.Request().Context(), actor(c), control.UserSpec(req))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, userDTO(u))
}

func (s *Server) userUpdate(c echo.Context) error {
	var req userUpdateRequest
	if err := bodyOf(c, 16<<10, &req); err != nil {
		return err
	}
	id, err := control.ParseID(c.Param("id"), "user")
	if err != nil {
		return err
	}
	u, err := s.ctl.PatchUser(c.Request().Context(), actor(c), id, control.UserPatch(req))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, userDTO(u))
}

func (s *Server) userDelete(c echo.Context) error {
	id, err := control.ParseID(c.Param("id"), "user")
	if err != nil {
		return err
	}
	if err := s.ctl.DeleteUser(c.Request().Context(), actor(c), id); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

func (s *Server) userRevokeTokens(c echo.Context) error {
	id, err := control.ParseID(c.Param("id"), "user")
	if err != nil {
		return err
	}
	if err := s.ctl.RevokeTokens(c.Request().Context(), actor(c), id); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}
