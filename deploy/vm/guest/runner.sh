#!/bin/bash
# The guest side of the package test: the image's vmtest-runner.service runs this at every
# boot from the 9p share. The share's `state` file says which boot this is, so the test
# resumes after its own reboot:
#   install  first boot: install the package, checks 1-8 and the first half of 9, reboot;
#   reboot   second boot: the rest of 9 (and 1 again: nothing started before a connection),
#            8 under NetworkManager, 10 (remove, purge); power off.
# Results go to the share's `results` file (deploy/vm/vm-test.sh reads it).
set -uo pipefail
HERE=$(dirname "$(readlink -f "$0")")
# shellcheck source=lib.sh
. "$HERE/lib.sh"

state=$(cat "$SHARE/state" 2>/dev/null || echo install)
boots=$(( $(cat "$SHARE/boots" 2>/dev/null || echo 0) + 1 ))
echo "$boots" >"$SHARE/boots"
say "boot $boots, phase $state"
# A test that reboots more often than it means to stops here.
if [ "$boots" -gt 3 ]; then
    result FAIL boot "the VM booted $boots times; the test reboots once"
    echo "done" >"$SHARE/state"
    systemctl poweroff
    exit 0
fi

case "$state" in
    install)
        # shellcheck source=boot-install.sh
        . "$HERE/boot-install.sh"
        save_journal boot1
        echo reboot >"$SHARE/state"
        sync
        say "rebooting"
        systemctl reboot
        ;;
    reboot)
        # shellcheck source=boot-reboot.sh
        . "$HERE/boot-reboot.sh"
        save_journal boot2
        echo "done" >"$SHARE/state"
        sync
        say "powering off"
        systemctl poweroff
        ;;
    *)
        say "nothing left to do (state $state)"
        systemctl poweroff
        ;;
esac
