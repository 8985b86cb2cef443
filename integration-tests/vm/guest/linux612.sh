#!/bin/bash
# The whole Linux 6.12 guest layer in ONE boot (run-guest.sh --kernel 6.12): DH-HMAC-CHAP (auth-linux612.sh), then
# NVMe/TCP TLS 1.3 (tls.sh). Each runs in its own bash with the environment run-guest.sh exported (see each script
# for its variables); both read SUBNQN, so tls.sh gets TLS_SUBNQN as its SUBNQN when that is set. Both clear nvmet
# before and after their kernel-target parts, so neither sees the other's configfs. Prints both scripts' PASS/FAIL
# and SUMMARY lines, then "SUMMARY-612: auth exit A, tls exit B"; exits non-zero when either failed.
# LinuxKernel612IT runs it.
set -u -o pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

echo "INFO ---- 6.12 layer, part 1: DH-HMAC-CHAP (auth-linux612.sh) ----"
bash "$HERE/auth-linux612.sh"
auth_rc=$?
echo "INFO ---- 6.12 layer, part 2: NVMe/TCP TLS (tls.sh) ----"
SUBNQN="${TLS_SUBNQN:-${SUBNQN:-}}" bash "$HERE/tls.sh"
tls_rc=$?
echo "SUMMARY-612: auth exit $auth_rc, tls exit $tls_rc"
[ "$auth_rc" = 0 ] && [ "$tls_rc" = 0 ]
