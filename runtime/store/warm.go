package store

import (
	"context"
	"strconv"
)

// Preparing a statement costs SQLite a parse and a plan: tens of
// microseconds for a narrow one, hundreds for a wide multi-row insert. The
// writer prepares each statement once and keeps it (Tx.stmt, Store.control),
// but a run that met them all for the first time paid some thirty of them
// on its first turns, on the path of every write it waited for. The writer
// now prepares them while it waits for work, from the moment the store is
// open (see Store.loop): a process sets up the rest of its engine, or waits
// for a person to type a goal, and then for the model, which leaves the
// writer idle for longer than all of them take (about 1.5 ms here). A write
// that arrives meanwhile waits for one statement at most.

// warmStatement is a statement the writer prepares ahead, with the key it
// is cached under; batch ones are multi-row inserts (see batchStmt).
type warmStatement struct {
	key, query string
	batch      bool
}

// warmStatements are the statements prepared ahead, roughly in the order a
// run first needs them; hot adds to them. The multi-row inserts follow,
// the narrow ones first (see warmList).
var warmStatements []warmStatement

// hot registers query as a statement to prepare ahead and returns it.
func hot(query string) string {
	warmStatements = append(warmStatements, warmStatement{key: query, query: query})
	return query
}

// warmList is every statement the writer prepares while idle.
func warmList() []warmStatement {
	out := append([]warmStatement(nil), warmStatements...)
	for n := 1; n <= maxRowsPerInsert; n *= 2 {
		out = append(out, warmStatement{messagesKey(n), insertMessagesSQL(n), true}, warmStatement{inboxKey(n), insertInboxSQL(n), true})
	}
	for t := range queuedTables {
		tab := &queuedTables[t]
		for n := 1; n <= tab.most; n *= 2 {
			out = append(out, warmStatement{tab.stmtKey(n), tab.query(n), true})
		}
	}
	for n := 1; n <= maxConsumedPerUpdate; n *= 2 {
		q := markConsumedSQL(n)
		out = append(out, warmStatement{key: q, query: q})
	}
	return out
}

// prepareAhead prepares w unless it is ready already. Only the writer
// calls it. An error is not reported here: the statement is prepared again
// where it is used, and fails there with its error if it still does.
func (s *Store) prepareAhead(w warmStatement) {
	if w.batch {
		s.batchStmt(w.key, func() string { return w.query })
		return
	}
	if _, ok := s.stmts[w.key]; ok {
		return
	}
	if st, err := s.conn.PrepareContext(context.Background(), w.query); err == nil {
		s.stmts[w.key] = st
	}
}

func messagesKey(n int) string { return "messages/" + strconv.Itoa(n) }
func inboxKey(n int) string    { return "inbox/" + strconv.Itoa(n) }
