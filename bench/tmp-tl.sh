set -u
. bench/e2b_node.bash e2b_ports.mjs
SERVE_WARD=$W e2b_serve "$(mktemp -d /var/tmp/ward-bench-e2b-ports.XXXXXX)"
id=$(cd "$NODE_DIR" && MARK=cnt-$$ E2B_API_URL=http://$e E2B_SANDBOX_URL=http://$e E2B_API_KEY=bench-token-0123456789 timeout 120 node e2b_ports.mjs)
curl -s -o /dev/null -H "E2b-Sandbox-Id: $id" -H "E2b-Sandbox-Port: 8000" http://$e/small
timeout 60 strace -f -tt -p $pid -o /tmp/relay-tl.txt &
sleep 1
curl -s -o /dev/null -H "E2b-Sandbox-Id: $id" -H "E2b-Sandbox-Port: 8000" http://$e/small http://$e/small
sleep 0.5; kill %1; wait
