#!/bin/bash
# tests/e2b/ports.sh — a server a sandbox runs, reached through the E2B
# listener (SPEC §18 "Ports"; issue 32.3), with the real SDK
# (tests/e2b/shared.mjs ports): getHost(port) is PORT-ID.localhost:<port>;
# routed by Host or by E2b-Sandbox-Id and E2b-Sandbox-Port, the query,
# headers and a 1 MiB body relayed; 502 with E2B's JSON where nothing
# listens or for an unknown sandbox; allowPublicTraffic false wants the
# traffic token (403 without); a paused sandbox's port 502 at once, or
# resumed by the request with autoResume.
. "$(dirname "$0")/lib.bash"
node_ready || exit 0
start_alice ports || exit 1
sdk_checked shared.mjs ports
stop_e2b ports
