package store

import (
	"context"
	"database/sql/driver"
	"fmt"
)

// The multi-row inserts of a commit carry hundreds of arguments each.
// database/sql turns every call's arguments into a new []driver.NamedValue,
// converting each int by reflection: 62 KB of the 465 KB a broadcast to a
// hundred siblings allocates, and about a twentieth of the CPU of a turn.
// The writer runs these inserts as statements of its own connection's
// driver instead, converting into one slice it keeps. The connection is the
// writer's alone for the life of the store, so the statements prepared on
// it stay valid from one Raw call to the next.

// batchStmt returns the insert cached under key, prepared from query the
// first time. Only the writer calls it. The driver is modernc's, which
// prepares with a context and executes with one.
func (s *Store) batchStmt(key string, query func() string) (driver.StmtExecContext, error) {
	if st, ok := s.batch[key]; ok {
		return st, nil
	}
	var st driver.Stmt
	err := s.conn.Raw(func(dc any) error {
		var err error
		st, err = dc.(driver.ConnPrepareContext).PrepareContext(context.Background(), query())
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("prepare: %w", err)
	}
	ec := st.(driver.StmtExecContext)
	s.batch[key] = ec
	return ec, nil
}

// execBatch runs an insert from batchStmt with args, in column order.
func (s *Store) execBatch(ctx context.Context, st driver.StmtExecContext, args []any) error {
	named := s.named[:0]
	defer func() {
		clear(named) // the texts of this commit are not kept alive by the next
		s.named = named[:0]
	}()
	for i, a := range args {
		v, err := driverValue(a)
		if err != nil {
			return fmt.Errorf("argument %d: %w", i+1, err)
		}
		named = append(named, driver.NamedValue{Ordinal: i + 1, Value: v})
	}
	return s.conn.Raw(func(any) error {
		_, err := st.ExecContext(ctx, named)
		return err
	})
}

// driverValue converts an argument as database/sql would: the types a
// driver takes as they are, an int to int64, anything else (named types,
// driver.Valuer) by driver.DefaultParameterConverter.
func driverValue(v any) (driver.Value, error) {
	switch x := v.(type) {
	case nil, int64, float64, bool, []byte, string:
		return v, nil
	case int:
		return int64(x), nil
	}
	return driver.DefaultParameterConverter.ConvertValue(v)
}

// closeBatch closes the statements of batchStmt.
func (s *Store) closeBatch() {
	s.conn.Raw(func(any) error {
		for _, st := range s.batch {
			st.(driver.Stmt).Close()
		}
		return nil
	})
	clear(s.batch)
}
