#!/bin/sh
# layering.sh SRCROOT — the source tree keeps its layering (docs/HACKING.md):
# every header's include guard is its own, and includes point down only:
# core <- sim, measure, plot, calibrate <- calibrate/survey.c, calibrate/replayfit*.c
# (over sim), validate <- app;
# core, sim <- serve <- app
# (sim, measure and plot know nothing of each other; of calibrate/ only the
# survey that measures through measure/ includes it); inside calibrate/ the
# includes point one way (no loop, only calibrate.c and report.c include calibrate.h).
# Prints each breach; exits 1 when there is one.
cd "${1:?usage: layering.sh SRCROOT}" || exit 1
bad=0
dups=$(grep -h '^#ifndef SB_' core/*.h sim/*.h measure/*.h plot/*.h calibrate/*.h \
  validate/*.h serve/*.h app/*.h 2>/dev/null | sort | uniq -d)
[ -n "$dups" ] && { echo "include guard used by two headers: $dups"; bad=1; }
breach() {   # DIRS FORBIDDEN-REGEX
  for d in $1; do
    hits=$(grep -nE "#include \"($2)/" "$d"/*.c "$d"/*.h 2>/dev/null)
    [ -n "$hits" ] && { echo "$d/ includes a component it must not:"; echo "$hits"; bad=1; }
  done
}
breach core 'sim|measure|plot|calibrate|validate|serve|app'
breach sim 'measure|plot|calibrate|validate|serve|app'
breach measure 'sim|plot|calibrate|validate|serve|app'
breach plot 'sim|measure|calibrate|validate|serve|app'
breach serve 'measure|plot|calibrate|validate|app'
hits=$(grep -nE '#include "(measure|validate|app)/' calibrate/*.c calibrate/*.h | grep -v '^calibrate/survey\.c:')
[ -n "$hits" ] && { echo "calibrate/ (other than survey.c) includes measure/, validate/ or app/:"; echo "$hits"; bad=1; }
hits=$(grep -nE '#include "sim/' calibrate/*.c calibrate/*.h | grep -v '^calibrate/replayfit[a-z_]*\.[ch]:')
[ -n "$hits" ] && { echo "calibrate/ (other than the replay fit) includes sim/:"; echo "$hits"; bad=1; }
breach validate 'serve|app'
# Inside calibrate/: only the facade's own sources (calibrate.c, report.c)
# include it, and the headers'
# includes form no loop (tsort reports one).
hits=$(grep -ln '#include "calibrate/calibrate.h"' calibrate/*.c calibrate/*.h | grep -v '^calibrate/\(calibrate\|report\)\.c$')
[ -n "$hits" ] && { echo "calibrate/ files other than calibrate.c and report.c include calibrate.h:"; echo "$hits"; bad=1; }
loop=$(for h in calibrate/*.h; do
  echo "$h $h"
  sed -n 's|^#include "\(calibrate/[a-z0-9_]*\.h\)".*|\1|p' "$h" | sed "s|^|$h |"
done | tsort 2>&1 >/dev/null)
[ -n "$loop" ] && { echo "calibrate/ headers include each other in a loop:"; echo "$loop"; bad=1; }
[ $bad = 0 ] && echo "layering: include guards unique, includes point down only"
exit $bad
