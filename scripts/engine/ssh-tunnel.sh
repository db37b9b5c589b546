#!/bin/sh
# Runs the OpenSSH child that forwards an ssh:// engine's socket to a local one (the arguments
# are ssh's, from src/engine/ssh-tunnel.ts), then removes the local socket and its private
# folder (GCD_SSH_SOCKET, GCD_SSH_DIR) however ssh ended. ssh ends when the plugin's process
# does: its stdin is a pipe from that process, whose end closes the remote command's input.
# The folder is removed here, not by the plugin, because the plugin may be gone by then.
ssh "$@"
status=$?
rm -f -- "$GCD_SSH_SOCKET"
rmdir -- "$GCD_SSH_DIR" 2>/dev/null
exit "$status"
