#!/usr/bin/env bash
# The composite action's run step (action.yml): runs the harness with the
# action's inputs, puts summary.md into the job's step summary, and hands
# the verdict and the report directory on as step outputs. It exits with
# the harness's own exit code, so a workflow gates on the verdict exactly
# as `mcpconform run` defines it (0 PASS, 1 FAIL, 2 ERROR, 3 INCOMPLETE).
#
# Inputs arrive as environment variables, never spliced into the script's
# text, so a value cannot run as shell code:
#   MCPCONFORM_BIN   the harness binary (required)
#   INPUT_TARGET     "reference" or the gateway's MCP URL
#   INPUT_PROFILE    the profile file (a URL target needs one)
#   INPUT_PROBE_URL  a running probe (mcpconform probe) the gateway calls
#   INPUT_LEVEL      the level claimed: wire, metered or full
#   INPUT_BASELINE   an earlier report directory to list regressions against
#   INPUT_OUT        the report directory (default mcpconform-report)
#   INPUT_ARGS       further flags of `mcpconform run`, split on blanks
set -uo pipefail

bin=${MCPCONFORM_BIN:?MCPCONFORM_BIN must name the mcpconform binary}
out=${INPUT_OUT:-mcpconform-report}

args=(run --out "$out" --format github)
add() { # add FLAG VALUE: only what the workflow gave
	if [[ -n $2 ]]; then args+=("$1" "$2"); fi
}
add --target "${INPUT_TARGET:-}"
add --profile "${INPUT_PROFILE:-}"
add --probe-url "${INPUT_PROBE_URL:-}"
add --level "${INPUT_LEVEL:-}"
add --baseline "${INPUT_BASELINE:-}"
if [[ -n ${INPUT_ARGS:-} ]]; then
	read -r -a extra <<<"$INPUT_ARGS"
	args+=("${extra[@]}")
fi

"$bin" "${args[@]}"
code=$?

# The verdict is summary.md's heading, which says what summary.json and
# the console say; a run that wrote none (a usage error) is read from its
# exit code.
verdict=""
if [[ -f $out/summary.md ]]; then
	verdict=$(sed -n '1s/^## mcpconform: \([A-Z]*\).*$/\1/p' "$out/summary.md")
fi
if [[ -z $verdict ]]; then
	case $code in
	0) verdict=PASS ;;
	1) verdict=FAIL ;;
	3) verdict=INCOMPLETE ;;
	130) verdict=INTERRUPTED ;;
	*) verdict=ERROR ;;
	esac
fi

if [[ -n ${GITHUB_STEP_SUMMARY:-} ]]; then
	if [[ -f $out/summary.md ]]; then
		cat "$out/summary.md" >>"$GITHUB_STEP_SUMMARY"
	else
		printf '## mcpconform: %s\n\nThe run wrote no report (exit %d); its log says why.\n' "$verdict" "$code" >>"$GITHUB_STEP_SUMMARY"
	fi
fi
if [[ -n ${GITHUB_OUTPUT:-} ]]; then
	printf 'verdict=%s\nreport-dir=%s\n' "$verdict" "$out" >>"$GITHUB_OUTPUT"
fi
exit "$code"
