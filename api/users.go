package api

import (
	"context"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

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
	return UserDTO{ID: u.ID, Username: u.Username, Role: string(u.Role), CreatedAt: u.CreatedAt.UTC().Format(timeFormat)}
}

// userCreateRequest creates a user; Role defaults to viewer.
type userCreateRequest struct {
	Username string `json:"username"`
	Password string `json:"password"`
	Role     string `json:"role"`
}

// userUpdateRequest is a merge patch of a user: a new role and/or password. Either
// change revokes the user's tokens.
type userUpdateRequest struct {
	Role     *string `json:"role"`
	Password *string `json:"password"`
}

func (s *Server) userList(c echo.Context) error {
	after, limit, err := listPage(c)
	if err != nil {
		return err
	}
	us, err := s.st.UserList(c.Request().Context(), after, limit)
	if err != nil {
		return err
	}
	out := listResponse[UserDTO]{Items: []UserDTO{}}
	for _, u := range us {
		out.Items = append(out.Items, userDTO(u))
	}
	if len(us) > 0 {
		out.NextCursor = nextCursor(us[len(us)-1].ID, len(us), limit)
	}
	return c.JSON(http.StatusOK, out)
}

func (s *Server) userCreateHandler(c echo.Context) error {
	body, err := readBody(c, 16<<10)
	if err != nil {
		return err
	}
	var req userCreateRequest
	if err := decodeStrict(body, &req); err != nil {
		return err
	}
	u, err := s.createUser(c, req)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, userDTO(u))
}

// createUser validates and stores a user (bcrypt password). Audited without the
// password. Shared by the API and the console.
func (s *Server) createUser(c echo.Context, req userCreateRequest) (*models.User, error) {
	var v models.ValidationError
	if req.Role == "" {
		req.Role = string(models.RoleViewer)
	}
	if !models.ValidUsername(req.Username) {
		v.Add("/username", "usernames are 1 to 120 bytes of UTF-8 without control characters or leading or trailing spaces")
	}
	if !models.ValidRole(models.Role(req.Role)) {
		v.Add("/role", "must be admin, operator or viewer")
	}
	if len(req.Password) < 8 || len(req.Password) > 72 {
		v.Add("/password", "passwords are 8 to 72 bytes")
	}
	if err := v.Err(); err != nil {
		return nil, err
	}
	hash, err := HashPassword(req.Password)
	if err != nil {
		return nil, err
	}
	u := &models.User{Username: req.Username, PasswordHash: hash, Role: models.Role(req.Role)}
	if err := s.st.UserCreate(c.Request().Context(), u); err != nil {
		return nil, err
	}
	s.audit(c, "user.create", u.Username, nil, userDTO(u))
	return u, nil
}

func (s *Server) userUpdateHandler(c echo.Context) error {
	body, err := readBody(c, 16<<10)
	if err != nil {
		return err
	}
	var req userUpdateRequest
	if err := decodeStrict(body, &req); err != nil {
		return err
	}
	u, err := s.updateUser(c, c.Param("id"), req)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, userDTO(u))
}

// updateUser changes a user's role and/or password and revokes their tokens; it
// refuses to demote the last admin. Audited. Shared by the API and the console.
func (s *Server) updateUser(c echo.Context, rawID string, req userUpdateRequest) (*models.User, error) {
	ctx := c.Request().Context()
	before, err := s.userByParam(ctx, rawID)
	if err != nil {
		return nil, err
	}
	id := before.ID
	var role *models.Role
	var hash *string
	var v models.ValidationError
	if req.Role != nil {
		r := models.Role(*req.Role)
		if !models.ValidRole(r) {
			v.Add("/role", "must be admin, operator or viewer")
		}
		role = &r
	}
	if req.Password != nil {
		h, err := HashPassword(*req.Password)
		if err != nil {
			v.Add("/password", "passwords are 8 to 72 bytes")
		}
		hash = &h
	}
	if err := v.Err(); err != nil {
		return nil, err
	}
	if err := s.st.UserUpdate(ctx, id, role, hash); err != nil {
		return nil, err
	}
	u, err := s.st.UserGetByID(ctx, id)
	if err != nil {
		return nil, err
	}
	s.audit(c, "user.update", u.Username, userDTO(before), map[string]any{"role": u.Role, "password_changed": hash != nil})
	return u, nil
}

func (s *Server) userDeleteHandler(c echo.Context) error {
	if err := s.deleteUser(c, c.Param("id")); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// deleteUser removes a user, refusing the last admin. Audited. Shared by the API and
// the console.
func (s *Server) deleteUser(c echo.Context, rawID string) error {
	ctx := c.Request().Context()
	u, err := s.userByParam(ctx, rawID)
	if err != nil {
		return err
	}
	id := u.ID
	if err := s.st.UserDelete(ctx, id); err != nil {
		return err
	}
	s.audit(c, "user.delete", u.Username, userDTO(u), nil)
	return nil
}

func (s *Server) userRevokeTokensHandler(c echo.Context) error {
	if err := s.revokeTokens(c, c.Param("id")); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// revokeTokens bumps a user's token_version, ending every session and JWT they hold.
func (s *Server) revokeTokens(c echo.Context, rawID string) error {
	ctx := c.Request().Context()
	u, err := s.userByParam(ctx, rawID)
	if err != nil {
		return err
	}
	id := u.ID
	if err := s.st.UserRevokeTokens(ctx, id); err != nil {
		return err
	}
	s.audit(c, "user.tokens.revoke", u.Username, nil, nil)
	return nil
}

// userByParam reads the user a path parameter names; a non-numeric id is not found.
func (s *Server) userByParam(ctx context.Context, rawID string) (*models.User, error) {
	id, err := strconv.ParseInt(rawID, 10, 64)
	if err != nil {
		return nil, problem("not-found", "no user "+rawID)
	}
	return s.st.UserGetByID(ctx, id)
}
