# SPDX-License-Identifier: LGPL-2.1-or-later
# Sourced by tests/run-all and tests/run-unit: run test programs, keep each
# one's log, count its ok / not ok lines, print one PASS/FAIL line per
# program and, at the end, the failures and "N passed, N failed".
# Set RUNNER_LOGDIR before sourcing.
pass=0 failn=0 failed=() skipped=()
rm -rf "$RUNNER_LOGDIR" && mkdir -p "$RUNNER_LOGDIR"
count() { # file: add its ok/not ok lines
	local p f
	p=$(grep -c '^ok ' "$1" || true)
	f=$(grep -c '^not ok ' "$1" || true)
	pass=$((pass + p)) failn=$((failn + f))
}
# run_one NAME COMMAND...: run it, log to RUNNER_LOGDIR/NAME.log, count.
run_one() {
	local name=$1 start rc
	shift
	start=$(date +%s)
	"$@" >"$RUNNER_LOGDIR/$name.log" 2>&1
	rc=$?
	count "$RUNNER_LOGDIR/$name.log"
	# 77 (tests/lib/common.sh skip_test): skipped, with no assertion run.
	if [ $rc -eq 77 ] && ! grep -q '^\(not \)\?ok ' "$RUNNER_LOGDIR/$name.log"; then
		skipped+=("$name")
		printf '%-40s SKIP (%ss)\n' "$name" $(($(date +%s) - start))
		return
	fi
	[ $rc -eq 0 ] || { failed+=("$name"); grep -q '^not ok' "$RUNNER_LOGDIR/$name.log" || failn=$((failn + 1)); }
	printf '%-40s %s (%ss)\n' "$name" "$([ $rc -eq 0 ] && echo PASS || echo FAIL)" $(($(date +%s) - start))
}
# A cmocka program, TAP output.
run_unit() { run_one "$(basename "$1")" env CMOCKA_MESSAGE_OUTPUT=TAP "$1"; }
# Print the skips, the failures and the summary; exit status 0 only if all passed.
summary() {
	local f
	for f in "${skipped[@]}"; do
		echo "---- $f skipped: $(sed -n 's/^# SKIP //p' "$RUNNER_LOGDIR/$f.log" | head -1)"
	done
	for f in "${failed[@]}"; do
		echo "---- $f ($RUNNER_LOGDIR/$f.log): failures"
		grep -E '^not ok|^#' "$RUNNER_LOGDIR/$f.log" | head -40
		tail -5 "$RUNNER_LOGDIR/$f.log"
	done
	echo "$pass passed, $failn failed"
	[ "$failn" -eq 0 ] && [ ${#failed[@]} -eq 0 ]
}
