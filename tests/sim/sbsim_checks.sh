# sbsim_checks.sh — sourced by the sbsim command-line tests
# (test_sbsim_*.sh): the checks they share. The caller sets SBSIM (the
# binary), T (a scratch directory) and fails (the count so far).

# bad EXPECTED-SUBSTRING ARGS...: exit 2 and stderr names the bad value
bad() {
	want=$1; shift
	"$SBSIM" "$@" >"$T/out" 2>"$T/err"
	rc=$?
	if [ $rc -ne 2 ]; then
		echo "FAIL: sbsim $* exited $rc, want 2"; fails=$((fails+1)); return
	fi
	if ! grep -qF -- "$want" "$T/err"; then
		echo "FAIL: sbsim $*: stderr lacks '$want':"; cat "$T/err"; fails=$((fails+1))
	fi
}

# ok ARGS...: exit 0
ok() {
	if ! "$SBSIM" "$@" >"$T/out" 2>"$T/err"; then
		echo "FAIL: sbsim $* exited nonzero:"; cat "$T/err"; fails=$((fails+1))
	fi
}

# has FILE WANT: FILE holds WANT
has() {
	file=$1 want=$2
	grep -qF -- "$want" "$file" || { echo "FAIL: $file lacks '$want':"; cat "$file"; fails=$((fails+1)); }
}

# field FILE PYTHON-EXPR: prints EXPR over the JSON document d in FILE
field() {
	python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print($2)" "$1"
}

# want FILE PYTHON-EXPR VALUE WHAT: EXPR over FILE's JSON prints VALUE
want() {
	got=$(field "$1" "$2")
	[ "$got" = "$3" ] || { echo "FAIL: $4: $got, want $3"; fails=$((fails+1)); }
}
