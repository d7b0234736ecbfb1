package main

import (
	"strings"

	"github.com/urfave/cli/v2"
)

// flagsFirst moves each command's flags before its positional arguments.
// urfave/cli v2 stops reading flags at the first positional argument, but
// perf users type `replay ingest perf.data -o out.arrow`; this makes both
// orders mean the same. Tokens after "--" stay as they are.
func flagsFirst(app *cli.App, args []string) []string {
	if len(args) < 2 {
		return args
	}
	out := []string{args[0]}
	cmds := app.Commands
	var cur *cli.Command
	i := 1
	// Global flags come before the command name.
	for i < len(args) && len(args[i]) > 1 && args[i][0] == '-' && args[i] != "--" {
		out = append(out, args[i])
		name := strings.TrimLeft(args[i], "-")
		i++
		if !strings.Contains(name, "=") && flagTakesValue(app.Flags, name) && i < len(args) {
			out = append(out, args[i])
			i++
		}
	}
	// Descend through (sub)command names given before any other token.
	for i < len(args) {
		next := findCommand(cmds, args[i])
		if next == nil {
			break
		}
		cur, cmds = next, next.Subcommands
		out = append(out, args[i])
		i++
	}
	if cur == nil {
		return args
	}
	var flags, pos []string
	for ; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			pos = append(pos, args[i:]...)
			break
		}
		if len(a) < 2 || a[0] != '-' {
			pos = append(pos, a)
			continue
		}
		flags = append(flags, a)
		name := strings.TrimLeft(a, "-")
		if strings.Contains(name, "=") {
			continue
		}
		if takesValue(cur, name) && i+1 < len(args) {
			i++
			flags = append(flags, args[i])
		}
	}
	out = append(out, flags...)
	return append(out, pos...)
}

func findCommand(cmds []*cli.Command, name string) *cli.Command {
	for _, c := range cmds {
		if c.HasName(name) {
			return c
		}
	}
	return nil
}

// takesValue reports whether the command's flag called name reads the next
// token as its value (every flag but booleans and help).
func takesValue(c *cli.Command, name string) bool {
	return flagTakesValue(c.Flags, name)
}

func flagTakesValue(flags []cli.Flag, name string) bool {
	for _, f := range flags {
		for _, n := range f.Names() {
			if n == name {
				_, isBool := f.(*cli.BoolFlag)
				return !isBool
			}
		}
	}
	return false
}
