// SPDX-License-Identifier: LGPL-2.1-or-later
// A TAP version 13 producer with the calls the OCI runtime-tools validation
// tests make (New, Header, AutoPlan, Ok, Pass, Fail, Skip, Todo, Diagnostic,
// Diagnosticf, YAML), written for nshash's test suite: the library those
// tests import is not packaged by Debian.  YAML blocks are written as JSON,
// which is YAML.
package tap

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
)

// T is one TAP stream.
type T struct {
	w        io.Writer
	n        int
	todo     bool
	autoPlan bool
	parent   *T
}

// New starts a stream on standard output.
func New() *T { return &T{w: os.Stdout} }

func (t *T) root() *T {
	for t.parent != nil {
		t = t.parent
	}
	return t
}

// Header writes the version line and, when count > 0, the plan.
func (t *T) Header(count int) {
	fmt.Fprintln(t.w, "TAP version 13")
	if count > 0 {
		fmt.Fprintf(t.w, "1..%d\n", count)
	}
}

// AutoPlan writes the plan from the number of tests run.
func (t *T) AutoPlan() {
	r := t.root()
	fmt.Fprintf(r.w, "1..%d\n", r.n)
}

func oneLine(s string) string { return strings.ReplaceAll(s, "\n", " ") }

func (t *T) line(ok bool, directive, desc string) {
	r := t.root()
	r.n++
	s := "ok"
	if !ok {
		s = "not ok"
	}
	out := fmt.Sprintf("%s %d", s, r.n)
	if desc != "" {
		out += " - " + oneLine(desc)
	}
	if directive != "" {
		out += " # " + directive
	} else if t.todo {
		out += " # TODO"
	}
	fmt.Fprintln(r.w, out)
}

// Ok records one test.
func (t *T) Ok(ok bool, desc string) { t.line(ok, "", desc) }

// Pass records a passing test.
func (t *T) Pass(desc string) { t.line(true, "", desc) }

// Fail records a failing test.
func (t *T) Fail(desc string) { t.line(false, "", desc) }

// Skip records count skipped tests.
func (t *T) Skip(count int, desc string) {
	for i := 0; i < count; i++ {
		t.line(true, "SKIP "+oneLine(desc), "")
	}
}

// Todo returns a view of the stream whose tests are marked TODO.
func (t *T) Todo() *T { return &T{w: t.w, todo: true, parent: t.root()} }

// Diagnostic writes a comment, one "# " line per line.
func (t *T) Diagnostic(msg string) {
	for _, l := range strings.Split(strings.TrimRight(msg, "\n"), "\n") {
		fmt.Fprintln(t.root().w, "# "+l)
	}
}

// Diagnosticf is Diagnostic with a format.
func (t *T) Diagnosticf(format string, a ...interface{}) { t.Diagnostic(fmt.Sprintf(format, a...)) }

// YAML writes v as an indented YAML block (in JSON form).
func (t *T) YAML(v interface{}) error {
	b, err := json.MarshalIndent(v, "  ", "  ")
	if err != nil {
		return err
	}
	fmt.Fprintf(t.root().w, "  ---\n  %s\n  ...\n", b)
	return nil
}
