package agents

import (
	"context"
	"encoding/json"
)

var readFile = &Tool{
	Pure:        true,
	Name:        "read_file",
	Group:       GroupWorkspace,
	Description: "Read a text file of the workspace (path relative to it). offset is the first line (1-based), limit the number of lines.",
	Schema: mustSchema(`{"type":"object","additionalProperties":false,
	  "properties":{
	    "path":{"type":"string","minLength":1},
	    "offset":{"type":"integer","minimum":1},
	    "limit":{"type":"integer","minimum":1,"maximum":5000}
	  },"required":["path"]}`),
	Handler: func(ctx context.Context, c *Call, args json.RawMessage) (any, error) {
		var a struct {
			Path   string `json:"path"`
			Offset int    `json:"offset"`
			Limit  int    `json:"limit"`
		}
		if err := decode(args, &a); err != nil {
			return nil, err
		}
		// What the JSON around the content takes: path, numbers, names.
		budget := 0
		if c.MaxOutput > 0 {
			budget = max(c.MaxOutput-300-len(a.Path), 200)
		}
		return c.Host.Workspace().ReadWithin(a.Path, a.Offset, a.Limit, budget)
	},
}

var listFiles = &Tool{
	Pure:        true,
	Name:        "list_files",
	Group:       GroupWorkspace,
	Description: "List a directory of the workspace (default: its top), or the whole tree below it with recursive: true.",
	Schema: mustSchema(`{"type":"object","additionalProperties":false,
	  "properties":{
	    "path":{"type":"string"},
	    "recursive":{"type":"boolean"},
	    "limit":{"type":"integer","minimum":1,"maximum":500}
	  }}`),
	Handler: func(ctx context.Context, c *Call, args json.RawMessage) (any, error) {
		var a struct {
			Path      string `json:"path"`
			Recursive bool   `json:"recursive"`
			Limit     int    `json:"limit"`
		}
		if err := decode(args, &a); err != nil {
			return nil, err
		}
		return c.Host.Workspace().List(a.Path, a.Recursive, a.Limit)
	},
}

var searchFiles = &Tool{
	Pure:  true,
	Name:  "search_files",
	Group: GroupWorkspace,
	Description: "Find lines containing query (case-insensitive) in the workspace's text files, optionally under path and only in files that match glob. " +
		"Files that were not searched, or not to their end, are listed under skipped with the reason.",
	Schema: mustSchema(`{"type":"object","additionalProperties":false,
	  "properties":{
	    "query":{"type":"string","minLength":1},
	    "path":{"type":"string"},
	    "glob":{"type":"string","description":"Without a slash, matches file names (\"*.go\"); with one, paths from the workspace's top, ** standing for any number of directories (\"src/**/*_test.go\")"},
	    "limit":{"type":"integer","minimum":1,"maximum":200}
	  },"required":["query"]}`),
	Handler: func(ctx context.Context, c *Call, args json.RawMessage) (any, error) {
		var a struct {
			Query string `json:"query"`
			Path  string `json:"path"`
			Glob  string `json:"glob"`
			Limit int    `json:"limit"`
		}
		if err := decode(args, &a); err != nil {
			return nil, err
		}
		return c.Host.Workspace().Search(a.Query, a.Path, a.Glob, a.Limit)
	},
}

// writeIntent is what a workspace write records before touching the disk,
// so that a re-run after a crash writes exactly the same bytes.
type writeIntent struct {
	Path         string `json:"path"`
	Content      []byte `json:"content"`
	Replacements int    `json:"replacements,omitempty"`
}

func applyIntent(ctx context.Context, c *Call, in writeIntent) (*WriteResult, error) {
	data, err := json.Marshal(in)
	if err != nil {
		return nil, err
	}
	earlier, err := c.Host.Intent(ctx, c, data)
	if err != nil {
		return nil, err
	}
	if earlier != nil {
		in = writeIntent{}
		if err := json.Unmarshal(earlier, &in); err != nil {
			return nil, err
		}
	}
	res, err := c.Host.Workspace().Write(in.Path, in.Content)
	if err != nil {
		return nil, err
	}
	res.Replacements = in.Replacements
	return res, nil
}

var writeFile = &Tool{
	Name:        "write_file",
	Group:       GroupWorkspace,
	Write:       true,
	Description: "Write a whole text file in the workspace (created with its directories if missing, replaced if present). A call's arguments hold at most 1 MiB: write a longer file in parts (its start here, the rest with edit_file).",
	Schema: mustSchema(`{"type":"object","additionalProperties":false,
	  "properties":{"path":{"type":"string","minLength":1},"content":{"type":"string"}},
	  "required":["path","content"]}`),
	Handler: func(ctx context.Context, c *Call, args json.RawMessage) (any, error) {
		var a struct {
			Path    string `json:"path"`
			Content string `json:"content"`
		}
		if err := decode(args, &a); err != nil {
			return nil, err
		}
		clean, err := c.Host.Workspace().Clean(a.Path)
		if err != nil {
			return nil, err
		}
		if err := refuseDirPath(a.Path, "write"); err != nil {
			return nil, err
		}
		defer c.Host.Workspace().LockPath(clean)()
		return applyIntent(ctx, c, writeIntent{Path: clean, Content: []byte(a.Content)})
	},
}

var editFile = &Tool{
	Name:  "edit_file",
	Group: GroupWorkspace,
	Write: true,
	Description: "Replace old_string with new_string in a workspace file. old_string must occur exactly once unless " +
		"replace_all is true; copy it exactly from read_file output.",
	Schema: mustSchema(`{"type":"object","additionalProperties":false,
	  "properties":{
	    "path":{"type":"string","minLength":1},
	    "old_string":{"type":"string","minLength":1},
	    "new_string":{"type":"string"},
	    "replace_all":{"type":"boolean"}
	  },"required":["path","old_string","new_string"]}`),
	Handler: func(ctx context.Context, c *Call, args json.RawMessage) (any, error) {
		var a struct {
			Path       string `json:"path"`
			Old        string `json:"old_string"`
			New        string `json:"new_string"`
			ReplaceAll bool   `json:"replace_all"`
		}
		if err := decode(args, &a); err != nil {
			return nil, err
		}
		// The file must not change between reading it and writing the edit.
		if clean, err := c.Host.Workspace().Clean(a.Path); err == nil {
			defer c.Host.Workspace().LockPath(clean)()
		}
		// A re-run after a crash repeats the recorded intent even though the
		// file may already hold the edit (old_string would be gone).
		clean, content, n, err := c.Host.Workspace().PlanEdit(a.Path, a.Old, a.New, a.ReplaceAll)
		if err != nil {
			if earlier, ierr := c.Host.Intent(ctx, c, nil); ierr == nil && earlier != nil {
				var in writeIntent
				if json.Unmarshal(earlier, &in) == nil {
					return applyIntent(ctx, c, in)
				}
			}
			return nil, err
		}
		return applyIntent(ctx, c, writeIntent{Path: clean, Content: content, Replacements: n})
	},
}

func allTools() []*Tool {
	return []*Tool{
		sessionsSpawn, taskCreate, taskOutput, taskSendMessage, taskCancel, taskWait, taskSiblings,
		taskBroadcast, taskBroadcastsRead, getSharedContext,
		createTaskPlan, addTask, updateTaskStatus, editTask, deleteTask, getTaskPlan, getReadyTasks, getBlockedTasks, viewAgentTasks,
		delegateTask, checkDelegationStatus, getDelegationResult,
		askOthers, broadcastMessage, announce,
		readFile, listFiles, searchFiles, writeFile, editFile,
	}
}
