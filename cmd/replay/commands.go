package main

import "github.com/urfave/cli/v2"

// commands lists the subcommands, in the order help shows them.
func commands() []*cli.Command {
	return []*cli.Command{
		ingestCommand(),
		infoCommand(),
		topologyCommand(),
		latencyCommand(),
		whatifCommand(),
		policiesCommand(),
		synthCommand(),
		exportCommand(),
		scriptCommand(),
		reportCommand(),
		demoCommand(),
	}
}
