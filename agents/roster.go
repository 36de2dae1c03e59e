package agents

import (
	"fmt"
	"sort"
	"strings"
)

// Role is one entry of the roster.
type Role struct {
	Name        string
	Description string
	Prompt      string          // template name
	Groups      map[string]bool // tool groups
	Model       string          // "" = the run's model
	CanSpawn    bool
	CanWrite    bool
}

// Roster is the set of roles sessions can take.
type Roster struct {
	roles map[string]*Role
	order []string
}

// NewRoster builds a roster; role names must be unique.
func NewRoster(roles []Role) (*Roster, error) {
	r := &Roster{roles: map[string]*Role{}}
	for i := range roles {
		role := roles[i]
		name := strings.TrimSpace(role.Name)
		if name == "" {
			return nil, fmt.Errorf("roster entry %d has no role name", i)
		}
		if _, dup := r.roles[name]; dup {
			return nil, fmt.Errorf("role %q is defined twice", name)
		}
		if role.Prompt == "" {
			role.Prompt = name
		}
		if role.Groups == nil {
			role.Groups = map[string]bool{}
		}
		r.roles[name] = &role
		r.order = append(r.order, name)
	}
	if _, ok := r.roles["orchestrator"]; !ok {
		return nil, fmt.Errorf("the roster needs an orchestrator role")
	}
	return r, nil
}

// Get finds a role.
func (r *Roster) Get(name string) (*Role, bool) {
	role, ok := r.roles[name]
	return role, ok
}

// Roles lists the roles in roster order.
func (r *Roster) Roles() []*Role {
	out := make([]*Role, 0, len(r.order))
	for _, n := range r.order {
		out = append(out, r.roles[n])
	}
	return out
}

// Names lists role names, sorted.
func (r *Roster) Names() []string {
	out := append([]string(nil), r.order...)
	sort.Strings(out)
	return out
}
