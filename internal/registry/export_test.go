package registry

import "github.com/jackc/pgx/v5"

// SetBeforeCommit lets tests act at the last moment of a publish.
func SetBeforeCommit(o *PublishOptions, fn func(tx pgx.Tx)) { o.beforeCommit = fn }
