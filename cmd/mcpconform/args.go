package main

import "flag"

// parseMixed parses flags that may come before, between or after the
// positional arguments (`bundle DIR -o X` as well as `bundle -o X DIR`),
// which flag.Parse alone stops at, and returns the positional ones.
func parseMixed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		if args[0] == "--" {
			return append(pos, args[1:]...), nil
		}
		pos, args = append(pos, args[0]), args[1:]
	}
}
