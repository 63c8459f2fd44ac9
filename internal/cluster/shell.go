package cluster

import "strings"

// Quote writes one argument for a POSIX shell. An argument with a $ is a
// template on purpose ($SLURM_ARRAY_TASK_ID/4, ${{ matrix.shard }}/4,
// $LAB_RUN): it goes in double quotes, where the shell (or the CI system
// before it) expands it and splits nothing. Anything else that is not
// plain goes in single quotes, patterns included: lab merge expands those
// itself.
func Quote(a string) string {
	if a != "" && strings.IndexFunc(a, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./=,:@+%", r))
	}) < 0 {
		return a
	}
	if strings.Contains(a, "$") {
		r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "`", "\\`")
		return `"` + r.Replace(a) + `"`
	}
	return "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
}

// Line is a command line for a shell.
func Line(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = Quote(a)
	}
	return strings.Join(q, " ")
}
