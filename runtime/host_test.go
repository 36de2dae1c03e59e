package runtime

import (
	"regexp"
	"strings"
	"testing"

	"github.com/swarmdeck/swarmdeck/runtime/scripted"
)

// A label that is another child's task id is refused: task_output,
// task_wait and chainAfter would find that child by it, never this one.
func TestSpawnRefusesALabelThatIsAChildsID(t *testing.T) {
	taskID := regexp.MustCompile(`s-[0-9a-f]{4,}`)
	p := policyFor(func(c *convo) scripted.Reply {
		switch {
		case !c.isRoot():
			return say(c.task + " done")
		case c.turns == 0:
			return do(call("sessions_spawn", obj{"task": "A", "label": "a"}))
		case c.turns == 1:
			id := taskID.FindString(c.last("sessions_spawn"))
			return do(call("sessions_spawn", obj{"task": "B", "label": id}))
		case c.turns == 2:
			return do(call("task_wait", obj{}))
		default:
			return say("root done")
		}
	})
	x, _, code := swarm(t, p, nil)
	mustComplete(t, x, code)
	res := toolResults(rootOf(x), "sessions_spawn")
	a := mustLabel(t, x, "a")
	want := `label "` + a.ID + `" is the task id of your child ` + a.ID + `; a label must not name another child: choose another`
	if len(res) != 2 || !strings.Contains(toolError(res[1]), want) {
		t.Errorf("sessions_spawn results %q; want the second refused with %q", res, want)
	}
}
