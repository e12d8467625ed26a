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
	local name=$1 start
	shift
	start=$(date +%s)
	"$@" >"$RUNNER_LOGDIR/$name.log" 2>&1
	finish_one "$name" $? "$start"
}
# finish_one NAME RC START: count its log, print its line.
finish_one() {
	local name=$1 rc=$2 start=$3
	count "$RUNNER_LOGDIR/$name.log"
	# 77 (tests/lib/common.sh skip_test): skipped, with no assertion run.
	if [ "$rc" -eq 77 ] && ! grep -q '^\(not \)\?ok ' "$RUNNER_LOGDIR/$name.log"; then
		skipped+=("$name")
		printf '%-40s SKIP (%ss)\n' "$name" $(($(date +%s) - start))
		return
	fi
	[ "$rc" -eq 0 ] || { failed+=("$name"); grep -q '^not ok' "$RUNNER_LOGDIR/$name.log" || failn=$((failn + 1)); }
	printf '%-40s %s (%ss)\n' "$name" "$([ "$rc" -eq 0 ] && echo PASS || echo FAIL)" $(($(date +%s) - start))
}
# run_bg NAME COMMAND...: run_one in the background (a test marked
# "# test-parallel: yes": it shares nothing with the others -- private
# names, ports, subnet -- and mostly waits); wait_bg collects them.
bg_names=() bg_pids=() bg_starts=()
run_bg() {
	local name=$1
	shift
	bg_names+=("$name")
	bg_starts+=("$(date +%s)")
	"$@" >"$RUNNER_LOGDIR/$name.log" 2>&1 &
	bg_pids+=($!)
	printf '%-40s started in the background\n' "$name"
}
wait_bg() {
	local i rc
	for i in "${!bg_pids[@]}"; do
		wait "${bg_pids[$i]}"
		rc=$?
		finish_one "${bg_names[$i]}" $rc "${bg_starts[$i]}"
	done
	bg_names=() bg_pids=() bg_starts=()
}
# A cmocka program, TAP output; a program that hangs (a helper never
# reaped, say) fails after 300 s instead of stopping the suite (each takes
# seconds here).
run_unit() { run_one "$(basename "$1")" timeout -k 10 300 env CMOCKA_MESSAGE_OUTPUT=TAP "$1"; }
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
