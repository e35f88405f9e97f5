package postgres_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/pollwarden/pollwarden/internal/sqlstore"
	"github.com/pollwarden/pollwarden/postgres"
)

// TestWriteCommitsWithItsLastBatch: a write transaction begins with its
// first statement and may commit with its last batch (BatchCommit). What
// it wrote before and in that batch is committed together; a statement
// after it fails instead of running outside the transaction; a failed
// statement in the last batch, or a function that fails, leaves nothing
// written, and the store's one connection serves the next write.
func TestWriteCommitsWithItsLastBatch(t *testing.T) {
	ctx := t.Context()
	s := openIn(t, freshSchema(t), postgres.Options{MaxConns: 1})
	if err := postgres.ExecRaw(ctx, s, "CREATE TABLE scratch (k text PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	insert := func(k string) sqlstore.Stmt {
		return sqlstore.Stmt{SQL: "INSERT INTO scratch (k) VALUES (?)", Args: []any{k}}
	}
	exec := func(q sqlstore.Querier, st sqlstore.Stmt) error {
		_, err := q.Exec(ctx, st.SQL, st.Args...)
		return err
	}
	commit := func(q sqlstore.Querier, stmts ...sqlstore.Stmt) error {
		return q.(sqlstore.Committer).BatchCommit(ctx, stmts)
	}
	err := postgres.Write(ctx, s, func(q sqlstore.Querier) error {
		if err := exec(q, insert("a")); err != nil {
			return err
		}
		if err := commit(q, insert("b")); err != nil {
			return err
		}
		if err := exec(q, insert("c")); err == nil {
			t.Error("a statement after the commit ran")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	err = postgres.Write(ctx, s, func(q sqlstore.Querier) error {
		if err := exec(q, insert("d")); err != nil {
			return err
		}
		return commit(q, insert("e"), insert("a"), insert("f"))
	})
	if err == nil {
		t.Fatal("a last batch with a duplicate key committed")
	}
	err = postgres.Write(ctx, s, func(q sqlstore.Querier) error {
		if err := exec(q, insert("g")); err != nil {
			return err
		}
		return context.Canceled
	})
	if err != context.Canceled {
		t.Fatalf("a failed function: %v", err)
	}
	// A batch first (its BEGIN goes with it), committed by Write.
	err = postgres.Write(ctx, s, func(q sqlstore.Querier) error {
		return q.Batch(ctx, []sqlstore.Stmt{insert("h"), insert("i")})
	})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	err = postgres.Write(ctx, s, func(q sqlstore.Querier) error {
		rows, err := q.Query(ctx, "SELECT k FROM scratch ORDER BY k")
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var k string
			if err := rows.Scan(&k); err != nil {
				return err
			}
			got = append(got, k)
		}
		return rows.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := "[a b h i]"; fmt.Sprint(got) != want {
		t.Fatalf("stored %v, want %s", got, want)
	}
}
