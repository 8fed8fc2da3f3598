// compose-validate loads a Compose file with the Compose Specification's own loader
// (github.com/compose-spec/compose-go/v2, the one docker compose uses): the file must pass the
// specification's schema and the loader's checks, with its variables interpolated from the
// environment and a .env file beside it. It then checks what the loader leaves to the engine:
// every bind-mounted host path and every build context and Dockerfile exists.
//
//	compose-validate deploy/docker-compose.yml
//
// Exit 0 and one line per service on success; 1 and the loader's message otherwise.
package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/types"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: compose-validate COMPOSE-FILE")
		os.Exit(2)
	}
	file, err := filepath.Abs(os.Args[1])
	if err != nil {
		fail(err)
	}
	opts, err := cli.NewProjectOptions([]string{file},
		cli.WithOsEnv,
		cli.WithDotEnv,
		cli.WithWorkingDirectory(filepath.Dir(file)),
		cli.WithResolvedPaths(true),
	)
	if err != nil {
		fail(err)
	}
	project, err := opts.LoadProject(context.Background())
	if err != nil {
		fail(err)
	}
	var problems []string
	names := make([]string, 0, len(project.Services))
	for name := range project.Services {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		svc := project.Services[name]
		for _, v := range svc.Volumes {
			if v.Type == types.VolumeTypeBind {
				if _, err := os.Stat(v.Source); err != nil {
					problems = append(problems, fmt.Sprintf("service %s: bind mount source %s: %v", name, v.Source, err))
				}
			}
		}
		if svc.Build != nil {
			if _, err := os.Stat(svc.Build.Context); err != nil {
				problems = append(problems, fmt.Sprintf("service %s: build context %s: %v", name, svc.Build.Context, err))
			}
			dockerfile := svc.Build.Dockerfile
			if dockerfile != "" && !filepath.IsAbs(dockerfile) {
				dockerfile = filepath.Join(svc.Build.Context, dockerfile)
			}
			if dockerfile != "" {
				if _, err := os.Stat(dockerfile); err != nil {
					problems = append(problems, fmt.Sprintf("service %s: Dockerfile %s: %v", name, dockerfile, err))
				}
			}
		}
		image := svc.Image
		if image == "" {
			image = "(built)"
		}
		fmt.Printf("%s: %s, %d volumes, %d ports\n", name, image, len(svc.Volumes), len(svc.Ports))
	}
	if len(problems) > 0 {
		for _, p := range problems {
			fmt.Fprintln(os.Stderr, "compose-validate: "+p)
		}
		os.Exit(1)
	}
	fmt.Printf("%s: project %q, %d services: valid\n", os.Args[1], project.Name, len(project.Services))
}

func fail(err error) {
	fmt.Fprintf(os.Stderr, "compose-validate: %s: %v\n", os.Args[1], err)
	os.Exit(1)
}
