# Shared by the session 29 scripts (source it): `ab LABEL ARGS..` times `tilekit bench --seed 7
# --rounds 20 ARGS..` with .gpu/bin/tilekit (new) and .gpu/bin/tilekit-base, alternating
# new/base/new/base in one call, appending the table rows to $OUT/ab.log and printing them.
ab() {
  local label=$1; shift
  for which in new base new base; do
    local bin=.gpu/bin/tilekit; [[ $which == base ]] && bin=.gpu/bin/tilekit-base
    timeout "${AB_TIMEOUT:-60}" $bin bench --seed 7 --rounds 20 "$@" > /tmp/b.txt 2>&1; local rc=$?
    echo "== $label $which rc $rc" >> $OUT/ab.log; grep -E "${AB_GREP:-^BM|error}" /tmp/b.txt >> $OUT/ab.log
    grep -E "${AB_GREP:-^BM|error}" /tmp/b.txt | sed "s/^/$label $which: /" | cut -c1-175
  done
}
