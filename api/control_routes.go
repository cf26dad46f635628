package api

import (
	"github.com/labstack/echo/v4"

	"github.com/heraldhq/herald/models"
)

// controlRoutes adds the rest of the control plane (DESIGN §6): topic update and
// delete, group update and actions, offsets, secrets, messages, keys, users and the
// audit log. Reading needs any role; changes need operator; users and the audit log
// need admin.
func (s *Server) controlRoutes(admin *echo.Group) {
	op := requireRole(models.RoleOperator)
	adm := requireRole(models.RoleAdmin)

	admin.PATCH("/topics/:topic", s.topicUpdate, op)
	admin.DELETE("/topics/:topic", s.topicDelete, op)
	admin.GET("/topics/:topic/messages", s.messageList)
	admin.GET("/messages/:id", s.messageGet)

	admin.PATCH("/groups/:group", s.groupUpdate, op)
	admin.GET("/groups/:group/offsets", s.groupOffsets)
	admin.POST("/groups/:group/offsets/reset", s.groupOffsetsReset, op)
	admin.POST("/groups/:group/secret/rotate", s.groupSecretRotate, op)
	admin.POST("/groups/:group/test", s.groupTestSend, op)

	admin.GET("/api-keys", s.apiKeyList)
	admin.POST("/api-keys/:id/revoke", s.apiKeyRevokeHandler, op)

	admin.GET("/users", s.userList, adm)
	admin.POST("/users", s.userCreateHandler, adm)
	admin.PATCH("/users/:id", s.userUpdateHandler, adm)
	admin.DELETE("/users/:id", s.userDeleteHandler, adm)
	admin.POST("/users/:id/revoke-tokens", s.userRevokeTokensHandler, adm)

	admin.GET("/audit-log", s.auditList, adm)
}
