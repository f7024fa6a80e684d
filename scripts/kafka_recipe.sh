#!/usr/bin/env bash
# docs/DEPLOYMENT.md's Kafka recipe, run as written on one machine, on loopback: a Kafka
# broker (4.1.1, KRaft mode: broker and controller in one JVM), the topics created
# beforehand, a probe (tapstat --kafka) on tapstat's sample trace, and the console
# consumer reading a topic back. Everything is started and stopped here, in a
# temporary directory that is removed at the end.
#
#   scripts/kafka_recipe.sh            (TAPSTAT=path/to/tapstat built with --features kafka;
#                                       default target/release/tapstat, else target/debug/tapstat)
#
# The jars (broker and command-line tools) come from scripts/kafka_jars.sh. Where the
# Kafka distribution is installed, `kafka-storage.sh`, `kafka-server-start.sh`,
# `kafka-topics.sh` and `kafka-console-consumer.sh` are the same classes as
# `java -cp "$JARS/*" kafka.tools.StorageTool`, `kafka.Kafka`,
# `org.apache.kafka.tools.TopicCommand` and `org.apache.kafka.tools.consumer.ConsoleConsumer`.
# Exits non-zero when a step fails or the consumer does not read back every record.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
t0=$(date +%s.%N)
say() { awk -v a="$t0" -v b="$(date +%s.%N)" -v m="$*" 'BEGIN { printf "[%5.1f s] %s\n", b - a, m }'; }

TAPSTAT="${TAPSTAT:-}"
if [ -z "$TAPSTAT" ]; then
  for b in "$here/target/release/tapstat" "$here/target/debug/tapstat"; do
    [ -x "$b" ] && { TAPSTAT="$b"; break; }
  done
fi
[ -x "${TAPSTAT:-}" ] || { echo "no tapstat binary: cargo build --release --features kafka" >&2; exit 2; }
JARS="$(bash "$here/scripts/kafka_jars.sh")"
kafka() { java -Xms128m -Xmx256m -cp "$JARS/*" "$@"; }

dir="$(mktemp -d -t tapstat-kafka-recipe.XXXXXX)"
broker=
cleanup() {
  if [ -n "$broker" ]; then kill "$broker" 2>/dev/null || true; wait "$broker" 2>/dev/null || true; fi
  rm -rf "$dir"
}
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
port=$(free_port); ctrl=$(free_port)
B="127.0.0.1:$port"

# 1. The broker: one node, KRaft, on loopback.
cat > "$dir/server.properties" <<EOF
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$ctrl
listeners=PLAINTEXT://$B,CONTROLLER://127.0.0.1:$ctrl
advertised.listeners=PLAINTEXT://$B
controller.listener.names=CONTROLLER
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
log.dirs=$dir/data
num.partitions=3
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
share.coordinator.state.topic.replication.factor=1
group.initial.rebalance.delay.ms=0
EOF
kafka kafka.tools.StorageTool format -t "$(kafka kafka.tools.StorageTool random-uuid)" \
  -c "$dir/server.properties" > "$dir/format.log"
kafka kafka.Kafka "$dir/server.properties" > "$dir/broker.log" 2>&1 &
broker=$!
until (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; do
  kill -0 "$broker" 2>/dev/null || { tail -20 "$dir/broker.log" >&2; exit 1; }
  sleep 0.2
done
say "broker up on $B"

# 2. The topics, beforehand (DEPLOYMENT.md, "Topics"): tapstat creates the others with
# the broker's defaults.
kafka org.apache.kafka.tools.TopicCommand --bootstrap-server "$B" --create --topic recipe.log_tcp_complete \
  --partitions 3 --replication-factor 1 --config retention.ms=604800000 --config compression.type=lz4
kafka org.apache.kafka.tools.TopicCommand --bootstrap-server "$B" --create --topic recipe.schema \
  --partitions 1 --replication-factor 1 --config cleanup.policy=compact
say "topics created"

# 3. The probe, on tapstat's sample trace.
"$TAPSTAT" synth -o "$dir/sample.pcap" --tcp-flows 200 --udp-flows 100 >/dev/null
"$TAPSTAT" -r "$dir/sample.pcap" -o "$dir/out" -q \
  --kafka "$B" --kafka-topic-prefix recipe --probe-id recipe-probe
want=$(($(wc -l < "$dir/out/log_tcp_complete") - 1))
say "probe done: $want records in log_tcp_complete"

# 4. The console consumer reads the topic back: key (the flow id), the probe_id header,
# the JSON value.
kafka org.apache.kafka.tools.consumer.ConsoleConsumer --bootstrap-server "$B" \
  --topic recipe.log_tcp_complete --from-beginning --max-messages "$want" --timeout-ms 20000 \
  --property print.key=true --property print.headers=true > "$dir/consumed.txt" 2> "$dir/consumer.log" || true
got=$(wc -l < "$dir/consumed.txt")
with_id=$(grep -c '^probe_id:recipe-probe' "$dir/consumed.txt" || true)
head -c 300 "$dir/consumed.txt"; echo
say "consumer read $got messages ($with_id with probe_id:recipe-probe) of $want"
if [ "$got" -ne "$want" ] || [ "$with_id" -ne "$want" ] || [ "$want" -lt 1 ]; then
  tail -5 "$dir/consumer.log" >&2
  echo "kafka_recipe: the topic does not hold the log's records" >&2
  exit 1
fi
echo "kafka_recipe: ok"
